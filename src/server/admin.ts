import { TroupeError } from "../core/errors.js";
import { authPolicy, LOCAL_PRINCIPAL, type Principal, type ServerConfig } from "./config.js";

/**
 * Who may administer troupe over HTTP (runtime grants): the principals named in TROUPE_ADMINS
 * (comma-separated API key names — what the auth hook names callers by), and, when the API is
 * served without keys on loopback, its one local caller: the operator at their own machine.
 */
export function isAdmin(principal: Principal, config: ServerConfig): boolean {
  if (!authPolicy(config).required) return principal.id === LOCAL_PRINCIPAL.id;
  const names = (config.admins ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter(Boolean);
  return names.includes(principal.id);
}

/** Refuses a caller that is not an admin (403 admin_required). */
export function requireAdmin(principal: Principal, config: ServerConfig): void {
  if (!isAdmin(principal, config)) {
    throw new TroupeError("admin_required", `this needs an admin key (TROUPE_ADMINS names them); ${principal.id} is not one`, { principal: principal.id });
  }
}
