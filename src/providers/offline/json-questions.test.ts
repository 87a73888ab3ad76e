import { JSONPath } from "jsonpath-plus";
import { describe, expect, it } from "vitest";
import { jsonQuestion, questionPath, singular } from "./json-questions.js";

const USERS = {
  meta: { count: 4 },
  users: [
    { name: "Ann", city: "Paris", age: 31, email: "ann@example.com", first_name: "Ann", active: true },
    { name: "Bob", city: "Lyon", age: 25, email: "bob@example.com", first_name: "Bob", active: false },
    { name: "Cyd", city: "Paris", age: 45, email: "cyd@example.com", first_name: "Cyd", active: true },
    { name: "Dee", city: "Nice", age: 38, email: "dee@example.com", first_name: "Dee", active: false },
  ],
  orders: [{ id: 1, status: "shipped", total: 20 }, { id: 2, status: "open", total: 35 }],
};

/** The question's answer as the json tool's query would find it. */
function ask(words: string, data: unknown = USERS, file = "users.json"): unknown[] {
  const question = jsonQuestion(words, file);
  if (!question) throw new Error(`no question in "${words}"`);
  const found = questionPath(question, data, true);
  if ("problem" in found) throw new Error(found.problem);
  return JSONPath({ path: found.path, json: data as object, wrap: true, eval: "safe" }) as unknown[];
}

describe("questions in words over JSON records", () => {
  it("selects a field of the records that meet the conditions", () => {
    expect(ask("the names of the users whose city is Paris in users.json")).toEqual(["Ann", "Cyd"]);
    expect(ask("list the emails of users older than 30 in users.json")).toEqual(["ann@example.com", "cyd@example.com", "dee@example.com"]);
    expect(ask("names of users with city paris and age over 40 in users.json")).toEqual(["Cyd"]);
    expect(ask("the names of the users whose age is at least 38 in users.json")).toEqual(["Cyd", "Dee"]);
    expect(ask("the first names of users whose city is not Paris in users.json")).toEqual(["Bob", "Dee"]);
    expect(ask("which users in users.json are active")).toEqual([USERS.users[0], USERS.users[2]]);
    expect(ask("the ids of the orders with status 'shipped' in users.json")).toEqual([1]);
    // A place or a value alone: whichever field holds it.
    expect(ask("the names of the users in Paris in users.json")).toEqual(["Ann", "Cyd"]);
    expect(ask("how many users in users.json live in Paris")).toHaveLength(2);
    expect(ask("the emails of users from Lyon in users.json")).toEqual(["bob@example.com"]);
    expect(ask("what is the age of Cyd in users.json")).toEqual([45]);
    expect(ask("how many of the users in users.json are older than 30")).toHaveLength(3);
    expect(ask("the names of the people in people.json", [{ name: "Eve" }, { name: "Fox" }], "people.json")).toEqual(["Eve", "Fox"]);
  });

  it("counts the records that meet the conditions, or all of them", () => {
    const count = jsonQuestion("how many users in users.json have an age over 30", "users.json");
    expect(count).toMatchObject({ count: true, collection: "users", conditions: [{ field: "age", operator: ">", value: 30 }] });
    expect(ask("how many users in users.json have an age over 30")).toHaveLength(3);
    expect(ask("count the users in users.json whose city is Paris")).toHaveLength(2);
    expect(ask("how many users are in users.json")).toHaveLength(4);
    expect(ask("how many orders in users.json have a total under 30")).toHaveLength(1);
  });

  it("finds the list by the fields it has when the noun names none, and reads a noun as a field when no list has that name", () => {
    const people = [{ name: "Eve", email: "eve@example.org" }, { name: "Fox", email: "fox@example.org" }];
    expect(ask("list the emails in people.json", people, "people.json")).toEqual(["eve@example.org", "fox@example.org"]);
    expect(ask("the names of the people in people.json", { data: { staff: people } }, "people.json")).toEqual(["Eve", "Fox"]);
    expect(ask("list the emails in users.json")).toEqual(USERS.users.map((user) => user.email));
  });

  it("reads a figure over a field as an aggregate and a singular field as one value", () => {
    expect(jsonQuestion("the average age of the users in users.json", "users.json")).toMatchObject({ aggregate: "avg", field: "age", collection: "users" });
    expect(jsonQuestion("what is the email of the user whose name is Bob in users.json", "users.json")).toMatchObject({ field: "email", singular: true });
    expect(jsonQuestion("the emails of the users in users.json", "users.json")).toMatchObject({ field: "email", singular: false });
  });

  it("leaves reads, validations and words it does not follow alone", () => {
    expect(jsonQuestion("read users.json", "users.json")).toBeUndefined();
    expect(jsonQuestion("show the contents of users.json", "users.json")).toBeUndefined();
    expect(jsonQuestion("check whether users.json is valid JSON", "users.json")).toBeUndefined();
    expect(jsonQuestion("list the names and emails of users in users.json", "users.json")).toBeUndefined();
    expect(jsonQuestion("how many users in users.json live on Mars and like cheese", "users.json")).toBeUndefined();
    // Words that would otherwise read as a comparison with a strange value: refused, not answered wrongly.
    expect(jsonQuestion("the names of users whose age is between 20 and 30 in users.json", "users.json")).toBeUndefined();
    expect(jsonQuestion("the names of users whose age is over 30 or whose city is Paris in users.json", "users.json")).toBeUndefined();
    expect(jsonQuestion("the names of users whose name starts with A in users.json", "users.json")).toBeUndefined();
    expect(jsonQuestion("the names of users whose age is over thirty in users.json", "users.json")).toBeUndefined();
    expect(jsonQuestion("the email of the user in users.json", "users.json")).toBeUndefined();
  });

  it("says which fields are missing rather than guessing", () => {
    const question = jsonQuestion("the phone numbers of the users in users.json", "users.json");
    expect(question && questionPath(question, USERS, true)).toEqual({ problem: expect.stringContaining("no list of records has phone number (found $.users with name, city") });
    expect(questionPath({ count: true, singular: false, conditions: [] }, { a: 1 }, true)).toEqual({ problem: "the file holds no list of records (objects) to ask about" });
    const mars = jsonQuestion("how many users in users.json live in Mars", "users.json");
    expect(mars && questionPath(mars, USERS, true)).toEqual({ problem: 'no field of the records holds "Mars"' });
  });

  it("without the data to look at, looks for matching records at any depth", () => {
    const question = jsonQuestion("the names of the users whose city is Paris in users.json", "users.json");
    expect(question && questionPath(question, undefined, false)).toEqual({ path: `$..[?(@.city === "Paris")].name`, records: "records at any depth" });
    // The keys a preview shows: the data's spelling, and whether one noun is a list or a field.
    const first = jsonQuestion("the first names of the users whose home city is Paris in users.json", "users.json");
    expect(first && questionPath(first, undefined, false, ["users", "first_name", "homeCity"])).toMatchObject({ path: `$..[?(@.homeCity === "Paris")].first_name` });
    const emails = jsonQuestion("list the emails in users.json", "users.json");
    expect(emails && questionPath(emails, undefined, false, ["users", "name", "email"])).toMatchObject({ path: "$..email" });
    const users = jsonQuestion("how many users are in users.json", "users.json");
    expect(users && questionPath(users, undefined, false, ["users", "name", "email"])).toMatchObject({ path: "$..users[*]" });
  });

  it("spells plurals as singular nouns", () => {
    expect(["names", "cities", "addresses", "status", "emails", "age"].map(singular)).toEqual(["name", "city", "address", "status", "email", "age"]);
  });
});
