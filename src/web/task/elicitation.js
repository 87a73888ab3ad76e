// A question an MCP server put to a person mid-call: its words as text, and a form built from
// the fields it asks for.

import { h } from "../dom.js";

/** One input of a server's form, built from its field's schema (the kinds MCP forms have). */
function formField(name, schema, required) {
  const label = `${schema.title ?? name}${required ? " *" : ""}`;
  const choices = schema.type === "array" ? (schema.items?.anyOf ?? (schema.items?.enum ?? []).map((value) => ({ const: value, title: value }))) : (schema.oneOf ?? (schema.enum ?? []).map((value, index) => ({ const: value, title: schema.enumNames?.[index] ?? value })));
  let input;
  let read;
  if (schema.type === "boolean") {
    input = h("input", { type: "checkbox", name, ...(schema.default === true ? { checked: true } : {}) });
    read = () => input.checked;
  } else if (schema.type === "array") {
    const boxes = choices.map((choice) => h("label", { class: "choice" }, h("input", { type: "checkbox", value: choice.const, ...((schema.default ?? []).includes(choice.const) ? { checked: true } : {}) }), ` ${choice.title}`));
    input = h("span", { class: "choices" }, ...boxes);
    read = () => boxes.map((box) => box.querySelector("input")).filter((box) => box.checked).map((box) => box.value);
  } else if (choices.length > 0) {
    input = h("select", { name }, ...(required ? [] : [h("option", { value: "" }, "")]), ...choices.map((choice) => h("option", { value: choice.const, ...(choice.const === schema.default ? { selected: true } : {}) }, choice.title)));
    read = () => (input.value === "" ? undefined : input.value);
  } else {
    const numeric = schema.type === "number" || schema.type === "integer";
    input = h("input", { type: numeric ? "number" : "text", name, ...(schema.default !== undefined ? { value: String(schema.default) } : {}) });
    read = () => (input.value === "" ? undefined : numeric ? Number(input.value) : input.value);
  }
  return { row: h("label", { class: "field" }, h("span", {}, label), input, schema.description ? h("small", { class: "muted" }, ` ${schema.description}`) : ""), name, read };
}

/**
 * A question an MCP server put to a person mid-call (issue 36): its own card, never an approval
 * of troupe's. The server's words are shown as text, marked as coming from it; the form is built
 * from its fields, and the answer is checked against them by the server of troupe's before the
 * run goes on (a wrong one comes back as an error here).
 */
export function elicitation(approval, interrupt, decide) {
  const { server, tool, agent, message, requestedSchema } = interrupt.payload;
  const required = new Set(requestedSchema?.required ?? []);
  const fields = Object.entries(requestedSchema?.properties ?? {}).map(([name, schema]) => formField(name, schema, required.has(name)));
  const card = h("div", { class: "elicitation", dataset: { interruptId: interrupt.id ?? "", server: String(server ?? "") } });
  const content = () => Object.fromEntries(fields.map((field) => [field.name, field.read()]).filter(([, value]) => value !== undefined));
  const ids = interrupt.id ? { interrupt_id: interrupt.id } : {};
  card.append(
    h("h3", {}, `The MCP server "${server ?? "?"}" asks a question`),
    h("p", { class: "source" }, `Its words, not troupe's, during ${agent ?? "an agent"}'s call to ${tool ?? "a tool"}: answering approves nothing of troupe's.`),
    h("blockquote", { class: "untrusted-text" }, String(message ?? "")),
    ...fields.map((field) => field.row),
    h(
      "div",
      { class: "row" },
      h("button", { type: "button", class: "primary", id: "send-form", onclick: () => decide({ decision: "answer", content: content(), ...ids }, card) }, "Send"),
      h("button", { type: "button", id: "decline-form", onclick: () => decide({ decision: "reject", ...ids }, card) }, "Decline"),
    ),
  );
  approval.replaceChildren(h("h2", {}, "A tool server asks you something"), card);
}
