import { randomUUID } from "node:crypto";
import path from "node:path";
import { Writable } from "node:stream";
import { type Message, Role, type Task } from "@a2a-js/sdk";
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from "@a2a-js/sdk/client";
import { Client as LangGraphClient } from "@langchain/langgraph-sdk";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Troupe } from "../src/runtime/engine.js";
import { createApp, createLogger } from "../src/server/app.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { ScriptedChatModel, type ScriptStep } from "../src/testing/scripted-chat-model.js";
import { formatNumber as number, formatTable, type Summary, summarize, withTempDir } from "./support.js";

/** The README's task: the offline model plans, computes, writes result.txt, reviews and answers. */
const README_TASK = "compute 17% of 2,340 and save it to result.txt";
/** Issue 26's bar: what MCP, A2A and the Agent Protocol may add to the REST API's p95 for the same task. */
export const ADDED_P95_TARGET_MS = 10;

export interface ProtocolsBenchOptions {
  runs: number;
  warmupRuns: number;
}

export interface ProtocolFigures {
  label: string;
  /** Client-side time from the request to the answer in hand (ms). */
  ms: Summary;
  /** What the protocol takes beyond the run itself: the client's time less the run's own (its record's creation to its end). */
  overheadMs: Summary;
  /** This protocol's overhead p95 minus REST's. */
  addedP95Ms: number;
  /** CPU time of this process (client and server both) per request: what the protocol costs whatever the machine's load. */
  cpuMs: Summary;
}

export interface ProtocolsBenchReport {
  runs: number;
  rest: ProtocolFigures;
  protocols: ProtocolFigures[];
  delegation: {
    runs: number;
    /** The README task as one troupe run here, on the offline model (its whole run: plan, subtasks, review, answer). */
    localMs: Summary;
    /** The same task as one subtask sent to a second troupe server over A2A: the subtask's start → end on the delegating server. */
    delegatedMs: Summary;
    /** What the second server's own run took (the same whole run), for the share A2A adds. */
    remoteRunMs: Summary;
    ratio: number;
  };
  target: { maxAddedP95Ms: number; met: boolean };
}

const silent = new Writable({ write: (_chunk, _encoding, done) => done() });

function message(text: string): Message {
  return { messageId: randomUUID(), contextId: "", taskId: "", role: Role.ROLE_USER, parts: [{ content: { $case: "text", value: text }, mediaType: "text/plain", filename: "", metadata: undefined }], metadata: undefined, extensions: [], referenceTaskIds: [] };
}

async function server(directory: string, troupe: Troupe) {
  const built = await createApp({ troupe, config: { rateLimitPerMinute: 0, maxEventLoopDelayMs: 0 }, logger: createLogger("error", silent) });
  await built.app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = built.app.server.address() as { port: number };
  return { built, base: `http://127.0.0.1:${port}`, directory };
}

/** REST as a client uses it: submit, follow the events until the run ends, read the task for its answer. Returns the run's id. */
async function viaRest(base: string): Promise<string> {
  const submitted = await fetch(`${base}/api/v1/execute`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ task: README_TASK }) });
  const { data } = (await submitted.json()) as { data: { task_id: string } };
  const events = await fetch(`${base}/api/v1/tasks/${data.task_id}/events`);
  const reader = (events.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!/event: run-end/.test(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  const view = (await (await fetch(`${base}/api/v1/tasks/${data.task_id}`)).json()) as { data: { status: string; result: { answer: string } } };
  if (view.data.status !== "completed") throw new Error(`REST run ended ${view.data.status}`);
  return data.task_id;
}

/**
 * Issue 26's section: the README task over REST (submit, events, task), MCP (`run_task` on the
 * SDK's Client over Streamable HTTP) and A2A (a blocking `SendMessage` on the SDK's client, over
 * JSON-RPC and over HTTP+JSON), against one in-process server on the offline model, rounds
 * interleaved so each protocol meets the same machine; then one subtask delegated to a second
 * server over A2A against the same task run locally.
 */
export async function measureProtocols(options: ProtocolsBenchOptions): Promise<ProtocolsBenchReport> {
  return withTempDir("troupe-bench-protocols-", async (root) => {
    const troupe = await Troupe.create({ provider: "offline", dataDir: path.join(root, "data"), workspace: path.join(root, "workspace") });
    const { built, base } = await server(root, troupe);
    const mcp = new McpClient({ name: "bench", version: "1" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)));
    const jsonRpc = await new ClientFactory().createFromUrl(base);
    const langgraph = new LangGraphClient({ apiUrl: `${base}/langgraph`, apiKey: null, callerOptions: { maxRetries: 0 } });
    const restBinding = await new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new RestTransportFactory(), new JsonRpcTransportFactory()], preferredTransports: ["HTTP+JSON"] }),
    ).createFromUrl(base);
    // Each returns the run it made.
    const variants: Array<{ label: string; run: () => Promise<string> }> = [
      { label: "REST (POST /execute, events, GET /tasks/:id)", run: () => viaRest(base) },
      {
        label: "MCP run_task (Streamable HTTP)",
        run: async () => {
          const result = (await mcp.callTool({ name: "run_task", arguments: { task: README_TASK } })) as { structuredContent?: { status?: string; run_id: string } };
          if (result.structuredContent?.status !== "completed") throw new Error(`MCP run ended ${result.structuredContent?.status}`);
          return result.structuredContent.run_id;
        },
      },
      { label: "A2A SendMessage (JSON-RPC)", run: async () => checkTask((await jsonRpc.sendMessage({ tenant: "", message: message(README_TASK), configuration: undefined, metadata: undefined })) as Task) },
      { label: "A2A SendMessage (HTTP+JSON)", run: async () => checkTask((await restBinding.sendMessage({ tenant: "", message: message(README_TASK), configuration: undefined, metadata: undefined })) as Task) },
      {
        label: "Agent Protocol runs.wait (LangGraph SDK)",
        run: async () => {
          let runId = "";
          const values = (await langgraph.runs.wait(null, "troupe", { input: { task: README_TASK }, onRunCreated: (created) => (runId = created.run_id) })) as { status?: string };
          if (values.status !== "completed") throw new Error(`Agent Protocol run ended ${values.status}`);
          return runId;
        },
      },
      {
        label: "Agent Protocol runs.stream (values, messages-tuple)",
        run: async () => {
          let runId = "";
          let status: string | undefined;
          for await (const part of langgraph.runs.stream(null, "troupe", { input: { task: README_TASK }, streamMode: ["values", "messages-tuple"], onRunCreated: (created) => (runId = created.run_id) })) {
            if (part.event === "values") status = (part.data as { status?: string }).status ?? status;
          }
          if (status !== "completed") throw new Error(`Agent Protocol stream ended ${status}`);
          return runId;
        },
      },
    ];
    const times = variants.map(() => [] as number[]);
    const overheads = variants.map(() => [] as number[]);
    const cpu = variants.map(() => [] as number[]);
    try {
      for (let round = 0; round < options.warmupRuns + options.runs; round += 1) {
        // Each round in another order, so no protocol always follows the same one (a collection left by it, a warm cache).
        for (let step = 0; step < variants.length; step += 1) {
          const index = (round + step) % variants.length;
          const variant = variants[index] as (typeof variants)[number];
          const startedCpu = process.cpuUsage();
          const started = performance.now();
          const runId = await variant.run();
          const elapsed = performance.now() - started;
          const used = process.cpuUsage(startedCpu);
          if (round < options.warmupRuns) continue;
          cpu[index]?.push((used.user + used.system) / 1000);
          const record = await troupe.store.runs.get(runId);
          if (!record?.finishedAt) throw new Error(`run ${runId} has no end`);
          times[index]?.push(elapsed);
          overheads[index]?.push(elapsed - (record.finishedAt - record.createdAt));
        }
      }
      const figures = variants.map((variant, index) => ({
        label: variant.label,
        ms: summarize(times[index] as number[]),
        overheadMs: summarize(overheads[index] as number[]),
        addedP95Ms: 0,
        cpuMs: summarize(cpu[index] as number[]),
      }));
      const restFigures = figures[0] as ProtocolFigures;
      const protocols = figures.slice(1).map((figure) => ({ ...figure, addedP95Ms: figure.overheadMs.p95 - restFigures.overheadMs.p95 }));
      const delegation = await measureDelegation(root, base, Math.max(3, Math.ceil(options.runs / 2)));
      return {
        runs: options.runs,
        rest: restFigures,
        protocols,
        delegation,
        target: { maxAddedP95Ms: ADDED_P95_TARGET_MS, met: protocols.every((protocol) => protocol.addedP95Ms <= ADDED_P95_TARGET_MS) },
      };
    } finally {
      await mcp.close();
      await built.tasks.shutdown(0);
      await built.mcp.closeAll();
      await built.app.close();
      await troupe.shutdown();
    }
  });
}

function checkTask(task: Task): string {
  if (task.status?.state !== 3) throw new Error(`A2A task ended in state ${task.status?.state}`);
  return task.id;
}

/** One subtask sent over A2A to the server at `remoteBase`, against the same task run locally (both on the offline model). */
async function measureDelegation(root: string, remoteBase: string, runs: number): Promise<ProtocolsBenchReport["delegation"]> {
  const steps: ScriptStep[] = [];
  for (let index = 0; index < runs + 1; index += 1) steps.push(planStep([subtask("r1", "helper", README_TASK)]), reviewStep(1), answerStep("done"));
  const delegator = await Troupe.create({
    models: modelSetOf(new ScriptedChatModel({ steps })),
    dataDir: path.join(root, "delegator"),
    workspace: path.join(root, "delegator-workspace"),
    config: { agents: [{ name: "helper", a2a: `${remoteBase}/.well-known/agent-card.json` } as never] },
    toolsConfig: { fetch: { allowAddresses: ["127.0.0.1/32"] } },
  });
  const local = await Troupe.create({ provider: "offline", dataDir: path.join(root, "local"), workspace: path.join(root, "local-workspace") });
  const localMs: number[] = [];
  const delegatedMs: number[] = [];
  const remoteRunMs: number[] = [];
  try {
    for (let round = 0; round < runs + 1; round += 1) {
      const delegated = await delegator.run({ task: "have the helper do the README task" });
      const sent = delegated.plan[0] as { durationMs?: number; status: string };
      if (sent.status !== "done") throw new Error(`the delegated subtask ended ${sent.status}`);
      const own = await local.run({ task: README_TASK });
      if (own.status !== "completed") throw new Error(`the local run ended ${own.status}`);
      const remote = await fetch(`${remoteBase}/api/v1/tasks?limit=1`).then((response) => response.json() as Promise<{ data: { items: Array<{ task_id: string }> } }>);
      const remoteRun = (await fetch(`${remoteBase}/api/v1/tasks/${remote.data.items[0]?.task_id}`).then((response) => response.json())) as { data: { metrics: { durationMs: number } } };
      if (round === 0) continue;
      delegatedMs.push(sent.durationMs ?? Number.NaN);
      localMs.push(own.metrics.durationMs);
      remoteRunMs.push(remoteRun.data.metrics.durationMs);
    }
  } finally {
    await delegator.shutdown();
    await local.shutdown();
  }
  const localSummary = summarize(localMs);
  const delegatedSummary = summarize(delegatedMs);
  return { runs, localMs: localSummary, delegatedMs: delegatedSummary, remoteRunMs: summarize(remoteRunMs), ratio: delegatedSummary.median / localSummary.median };
}

/** The section of the readable report. */
export function protocolsSection(report: ProtocolsBenchReport): string {
  const row = (figures: ProtocolFigures, rest: boolean): string[] => [
    figures.label,
    number(figures.ms.median),
    number(figures.ms.p95),
    number(figures.overheadMs.median),
    number(figures.overheadMs.p95),
    rest ? "" : `${figures.addedP95Ms >= 0 ? "+" : ""}${number(figures.addedP95Ms)}`,
    number(figures.cpuMs.median),
  ];
  const table = formatTable(
    ["README task (ms)", "client median", "client p95", "beyond the run: median", "p95", "p95 − REST's", "CPU ms median"],
    [row(report.rest, true), ...report.protocols.map((protocol) => row(protocol, false))],
  );
  const { delegation } = report;
  const delegationTable = formatTable(
    ["the README task as one subtask (ms)", "median", "p95", "max"],
    [
      ["run here (the whole run)", number(delegation.localMs.median), number(delegation.localMs.p95), number(delegation.localMs.max)],
      ["sent to a second server over A2A (the subtask)", number(delegation.delegatedMs.median), number(delegation.delegatedMs.p95), number(delegation.delegatedMs.max)],
      ["  of which the second server's run", number(delegation.remoteRunMs.median), number(delegation.remoteRunMs.p95), number(delegation.remoteRunMs.max)],
    ],
  );
  return [
    `19. Protocols: the README task over REST, MCP, A2A and the Agent Protocol (LangGraph's SDK) against one server (offline model), ${report.runs} rounds (each in another order) after a warm-up,`,
    "   timed at the client from the request to the answer in hand (REST: submit, follow the events to run-end, read the task);",
    "   \"beyond the run\" is that time less the run's own (its record's creation to its end), so the run's variance stays out;",
    "   CPU ms is this process's CPU time per request (client and server, run included), which the machine's load does not inflate.",
    "",
    table,
    "",
    `   target: what each protocol adds ≤ ${report.target.maxAddedP95Ms} ms p95 over REST's → ${verdict(report.target.met)}`,
    "",
    `   Delegation: the same task sent as one subtask to a second troupe server over A2A (card, SendMessage, the task's stream, its artifacts), ${delegation.runs} runs:`,
    "",
    delegationTable,
    "",
    `   delegated ÷ local (medians): ${number(delegation.ratio)}×`,
  ].join("\n");
}

function verdict(met: boolean): string {
  return met ? "MET" : "NOT MET";
}
