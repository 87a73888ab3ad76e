import { ConfigError } from "../core/errors.js";

/**
 * A provider's base URL, checked before any request: an absolute http(s) URL without
 * credentials, query or fragment. `source` names where it came from (a variable or a setting).
 */
export function parseBaseUrl(value: string, source: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError("invalid_base_url", `${source} is not a valid URL: "${value}" (expected e.g. http://127.0.0.1:8000/v1)`, { source, value });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError("invalid_base_url", `${source} must be an http:// or https:// URL, not "${value}"`, { source, value });
  }
  if (url.username || url.password) {
    throw new ConfigError("invalid_base_url", `${source} must not carry credentials; put the key in the API key variable`, { source });
  }
  if (url.search || url.hash) {
    throw new ConfigError("invalid_base_url", `${source} must not have a query or fragment: "${value}"`, { source, value });
  }
  return url.href.replace(/\/+$/, "");
}

/** The value of an environment variable by name (a key variable named in the config file). */
export function envValue(env: Record<string, unknown>, name: string): string | undefined {
  const value = env[name];
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}
