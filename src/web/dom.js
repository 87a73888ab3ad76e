// Small DOM helpers: build elements without innerHTML (text is always text).

/** `h("div", { class: "x", onclick }, child, "text")` */
export function h(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function badge(status) {
  return h("span", { class: `badge status-${status}`, "data-status": status }, status);
}

export function time(value) {
  if (!value) return "";
  const date = typeof value === "number" ? new Date(value) : new Date(value);
  return date.toLocaleTimeString([], { hour12: false });
}

export function dateTime(value) {
  if (!value) return "";
  const date = new Date(value);
  return `${date.toLocaleDateString()} ${date.toLocaleTimeString([], { hour12: false })}`;
}

export function errorBox(error) {
  return h("p", { class: "error", role: "alert" }, error?.code ? `${error.message} (${error.code})` : String(error?.message ?? error));
}
