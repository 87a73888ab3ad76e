import { describe, expect, it } from "vitest";
import { fileOperations } from "./file-operations.js";

const moves = (clause: string) => fileOperations(clause)?.map((operation) => ("from" in operation ? [operation.kind, operation.from, operation.to] : [operation.kind, operation.path, operation.recursive]));

describe("file operations in words", () => {
  it("copies, moves and renames onto a new name or into a folder", () => {
    expect(moves("rename a.txt to b.txt")).toEqual([["move", "a.txt", "b.txt"]]);
    expect(moves("rename notes.md as notes-old.md")).toEqual([["move", "notes.md", "notes-old.md"]]);
    expect(moves("rename a.txt to README")).toEqual([["move", "a.txt", "README"]]);
    expect(moves("move a.txt into archive/")).toEqual([["move", "a.txt", "archive/a.txt"]]);
    expect(moves("move a.txt to the archive folder")).toEqual([["move", "a.txt", "archive/a.txt"]]);
    expect(moves("move data/a.txt to archive")).toEqual([["move", "data/a.txt", "archive/a.txt"]]);
    expect(moves("copy report.md to backup/report.md")).toEqual([["copy", "report.md", "backup/report.md"]]);
    expect(moves("make a copy of a.txt called a-copy.txt")).toEqual([["copy", "a.txt", "a-copy.txt"]]);
    expect(moves("back up users.json to backup/")).toEqual([["copy", "users.json", "backup/users.json"]]);
    expect(moves('copy the file "my notes.txt" to notes.txt')).toBeUndefined();
  });

  it("does the same to each of several files, each with a clause of its own", () => {
    expect(fileOperations("move a.txt and b.txt into archive/")).toEqual([
      { kind: "move", clause: "Move a.txt to archive/a.txt", from: "a.txt", to: "archive/a.txt", usesPrevious: false },
      { kind: "move", clause: "Move b.txt to archive/b.txt", from: "b.txt", to: "archive/b.txt", usesPrevious: false },
    ]);
    expect(moves("copy a.txt, b.txt and c.txt to backup/")).toEqual([
      ["copy", "a.txt", "backup/a.txt"],
      ["copy", "b.txt", "backup/b.txt"],
      ["copy", "c.txt", "backup/c.txt"],
    ]);
    // Several files cannot all become one file.
    expect(moves("copy a.txt and b.txt to c.txt")).toBeUndefined();
  });

  it("deletes files, and folders with everything in them", () => {
    expect(moves("delete old.txt")).toEqual([["delete", "old.txt", false]]);
    expect(moves("remove the file logs/app.log from the workspace")).toEqual([["delete", "logs/app.log", false]]);
    expect(moves("delete old.txt and tmp.txt")).toEqual([["delete", "old.txt", false], ["delete", "tmp.txt", false]]);
    expect(moves("delete the folder tmp")).toEqual([["delete", "tmp", true]]);
    expect(moves("delete tmp/")).toEqual([["delete", "tmp", true]]);
    expect(moves("remove duplicates from list.txt")).toBeUndefined();
    expect(moves("delete ../etc/passwd")).toBeUndefined();
  });
});
