// The console's API client: every call sends the API key (kept in sessionStorage), and a 401
// asks for a key and tries once more.

const KEY = "troupe.apiKey";
const dialog = () => document.getElementById("key-dialog");

export function apiKey() {
  return sessionStorage.getItem(KEY) ?? "";
}

export function authHeaders() {
  const key = apiKey();
  return key ? { authorization: `Bearer ${key}` } : {};
}

export function showKeyState() {
  const state = document.getElementById("key-state");
  if (state) state.textContent = apiKey() ? "key set" : "";
}

/** Opens the key dialog and resolves once a key was entered (or the dialog closed). */
export function askForKey(reason) {
  return new Promise((resolve) => {
    const element = dialog();
    const input = document.getElementById("key-input");
    document.getElementById("key-reason").textContent = reason ?? "This server requires an API key. It is kept in this browser tab only.";
    input.value = apiKey();
    const onClose = () => {
      element.removeEventListener("close", onClose);
      if (element.returnValue === "save" && input.value.trim()) sessionStorage.setItem(KEY, input.value.trim());
      showKeyState();
      resolve(apiKey());
    };
    element.addEventListener("close", onClose);
    element.returnValue = "";
    element.showModal();
    input.focus();
  });
}

export function forgetKey() {
  sessionStorage.removeItem(KEY);
  showKeyState();
}

export class ApiError extends Error {
  constructor(status, code, message, data) {
    super(message);
    this.status = status;
    this.code = code;
    this.data = data;
  }
}

/** Calls the API; returns the envelope's data or throws an ApiError with its code. */
export async function api(path, { method = "GET", body, retried = false } = {}) {
  const headers = { accept: "application/json", ...authHeaders() };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(`/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const envelope = await response.json().catch(() => ({ code: "bad_response", message: `HTTP ${response.status}`, data: null }));
  if (response.status === 401 && !retried) {
    await askForKey(envelope.code === "invalid_api_key" ? "That key was not accepted. Enter a valid API key." : undefined);
    if (apiKey()) return api(path, { method, body, retried: true });
  }
  if (!response.ok) throw new ApiError(response.status, envelope.code, envelope.message, envelope.data);
  return envelope.data;
}
