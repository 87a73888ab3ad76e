import type { FastifyInstance } from "fastify";
import type { GrantView as RuntimeGrantView } from "../../runtime/grants.js";
import type { RuntimeGrant } from "../../tools/permissions.js";
import { requireAdmin } from "../admin.js";
import { envelopeOf, ok } from "../envelope.js";
import type { RouteContext } from "../route-context.js";
import { GrantBody, GrantList, GrantListQuery, GrantParams, GrantView, RevokeQuery } from "../schemas.js";
import { parseRequestPart } from "../validation.js";

const iso = (ms: number | null | undefined): string | null => (ms === null || ms === undefined ? null : new Date(ms).toISOString());

function view(item: RuntimeGrantView) {
  return {
    id: item.id,
    source: item.source,
    agent: item.grant.agent,
    tool: item.grant.tool,
    level: item.grant.level,
    conditions: (item.grant.conditions as Record<string, unknown> | undefined) ?? null,
    expires_at: iso(item.grant.expiresAt),
    granted_by: item.grant.grantedBy,
    created_at: iso(item.createdAt),
    reason: item.reason,
    revoked_at: iso(item.revokedAt),
    revoked_by: item.revokedBy,
    revoke_reason: item.revokeReason,
    live: item.live,
  };
}

const runtimeView = (grant: RuntimeGrant) => view({ ...grant, source: "runtime", live: grant.revokedAt === null && (grant.grant.expiresAt === undefined || grant.grant.expiresAt > Date.now()) });

/** /grants: runtime grants, behind an admin key; every change is audited with the admin's name. */
export function registerGrantRoutes(api: FastifyInstance, { troupe, docs, config }: RouteContext): void {
  docs.add({ method: "get", path: "/api/v1/grants", operationId: "listGrants", errors: ["admin_required"], summary: "The grants in force (config, roles, runtime); admins only", tags: ["grants"], query: GrantListQuery, responses: { 200: { description: "the grants", schema: envelopeOf(GrantList) } } });
  api.get("/grants", async (request) => {
    requireAdmin(request.principal, config);
    const query = parseRequestPart(GrantListQuery, request.query);
    const items = (await troupe.grants.list({ ...(query.agent ? { agent: query.agent } : {}), includeRevoked: true })).filter((item) => query.all === "true" || item.live);
    return ok({ items: items.map(view), total: items.length });
  });

  docs.add({
    method: "post",
    path: "/api/v1/grants", operationId: "addGrant", errors: ["admin_required", "invalid_grant", "unknown_agent", "unknown_tool"],
    summary: "Give an agent a level on a tool from now on (calls that start after it); admins only, audited",
    tags: ["grants"],
    body: GrantBody,
    responses: { 201: { description: "the grant", schema: envelopeOf(GrantView) } },
  });
  api.post("/grants", async (request, reply) => {
    requireAdmin(request.principal, config);
    const body = parseRequestPart(GrantBody, request.body);
    const grant = await troupe.grants.add(
      { agent: body.agent, tool: body.tool, level: body.level, ...(body.conditions ? { conditions: body.conditions as never } : {}), ...(body.expires_at !== undefined ? { expiresAt: body.expires_at } : {}) },
      { by: request.principal.id, ...(body.reason ? { reason: body.reason } : {}) },
    );
    reply.code(201).header("location", `/api/v1/grants/${grant.id}`);
    return ok(runtimeView(grant), "granted");
  });

  docs.add({
    method: "delete",
    path: "/api/v1/grants/{id}", operationId: "revokeGrant", errors: ["admin_required", "grant_not_found"],
    summary: "Revoke a runtime grant: calls that start after it are denied, naming the revocation; admins only, audited",
    tags: ["grants"],
    params: GrantParams,
    query: RevokeQuery,
    responses: { 200: { description: "the grant, revoked", schema: envelopeOf(GrantView) } },
  });
  api.delete("/grants/:id", async (request) => {
    requireAdmin(request.principal, config);
    const { id } = parseRequestPart(GrantParams, request.params);
    const query = parseRequestPart(RevokeQuery, request.query);
    const grant = await troupe.grants.revoke(id, { by: request.principal.id, ...(query.reason ? { reason: query.reason } : {}) });
    return ok(runtimeView(grant), "revoked");
  });
}
