import type { FastifyInstance } from "fastify";
import { DEFAULT_SCHEDULE_LIMITS } from "../../core/schedule.js";
import { threadNameOf } from "../../core/thread-key.js";
import type { ScheduleView as RuntimeScheduleView } from "../../runtime/schedules.js";
import { envelopeOf, ok } from "../envelope.js";
import { runRequestOfWire } from "../run-request-wire.js";
import type { RouteContext } from "../route-context.js";
import { ScheduleBody, ScheduleList, ScheduleParams, ScheduleView } from "../schemas.js";
import { parseRequestPart } from "../validation.js";

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

function view(schedule: RuntimeScheduleView) {
  return {
    id: schedule.id,
    name: threadNameOf(schedule.owner, schedule.name),
    cron: schedule.cron,
    timezone: schedule.timezone,
    task: schedule.task,
    thread_id: schedule.request.threadId ?? null,
    on_busy: schedule.request.onBusy ?? null,
    catch_up: schedule.catchUp,
    source: schedule.source,
    last_tick: iso(schedule.lastTick),
    last_fired_at: iso(schedule.lastFiredAt),
    last_task_id: schedule.lastRunId,
    next_tick: iso(schedule.nextTick),
  };
}

/** /schedules: the caller's schedules; their runs are the caller's tasks. */
export function registerScheduleRoutes(api: FastifyInstance, { troupe, docs }: RouteContext): void {
  docs.add({ method: "get", path: "/api/v1/schedules", operationId: "listSchedules", summary: "The caller's schedules, with their last and next ticks", tags: ["schedules"], responses: { 200: { description: "the schedules", schema: envelopeOf(ScheduleList) } } });
  api.get("/schedules", async (request) => {
    const items = await troupe.schedules.list({ owner: request.principal.id });
    return ok({ items: items.map(view), total: items.length });
  });

  docs.add({
    method: "post",
    path: "/api/v1/schedules", operationId: "createSchedule", errors: ["invalid_schedule", "invalid_cron", "invalid_timezone", "schedule_exists", "too_many_schedules", "schedules_too_frequent", "context_too_large", "invalid_request", "invalid_output_schema", "unknown_tool", "webhook_refused", "webhook_secret_missing"],
    summary: "Run a task on a cron schedule (troupe serve fires each tick once, whatever the number of processes); one key holds at most server.schedules.maxPerKey schedules (25) firing at most server.schedules.maxFiresPerHourPerKey runs an hour together (60): 403 too_many_schedules, schedules_too_frequent",
    tags: ["schedules"],
    body: ScheduleBody,
    responses: { 201: { description: "the schedule", schema: envelopeOf(ScheduleView) } },
  });
  api.post("/schedules", async (request, reply) => {
    const { cron, name, timezone, catch_up: catchUp, ...options } = parseRequestPart(ScheduleBody, request.body);
    // Its run's options are checked now as a submission's are (tools, webhook, output schema), not at each tick.
    troupe.checkRequest(runRequestOfWire(options));
    const added = await troupe.schedules.add(
      // The run's options go through the one codec (run-request-wire.ts): a new run option is stored with no edit here.
      { cron, ...(name !== undefined ? { name } : {}), ...(timezone !== undefined ? { timezone } : {}), ...(catchUp !== undefined ? { catchUp } : {}), ...runRequestOfWire(options) },
      // What one key may schedule: the config's server.schedules over the defaults (25 schedules, 60 runs an hour).
      { owner: request.principal.id, source: "api", limits: { ...DEFAULT_SCHEDULE_LIMITS, ...troupe.config.server?.schedules } },
    );
    reply.code(201).header("location", `/api/v1/schedules/${added.id}`);
    return ok(view(added), "scheduled");
  });

  docs.add({ method: "get", path: "/api/v1/schedules/{id}", operationId: "getSchedule", errors: ["schedule_not_found"], summary: "One schedule (by id or name)", tags: ["schedules"], params: ScheduleParams, responses: { 200: { description: "the schedule", schema: envelopeOf(ScheduleView) } } });
  api.get("/schedules/:id", async (request) => {
    const { id } = parseRequestPart(ScheduleParams, request.params);
    return ok(view(await troupe.schedules.get(id, { owner: request.principal.id })));
  });

  docs.add({ method: "delete", path: "/api/v1/schedules/{id}", operationId: "deleteSchedule", errors: ["schedule_not_found", "schedule_from_config"], summary: "Stop a schedule", tags: ["schedules"], params: ScheduleParams, responses: { 200: { description: "the schedule removed", schema: envelopeOf(ScheduleView) } } });
  api.delete("/schedules/:id", async (request) => {
    const { id } = parseRequestPart(ScheduleParams, request.params);
    return ok(view(await troupe.schedules.remove(id, { owner: request.principal.id })), "removed");
  });
}
