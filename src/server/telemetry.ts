import { randomFillSync } from "node:crypto";
import { type Context, ROOT_CONTEXT, type Tracer, trace, TraceFlags } from "@opentelemetry/api";

/**
 * OpenTelemetry tracing: spans run → node → model call / tool call, exported over OTLP/HTTP when
 * OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set; otherwise nothing
 * is loaded and no span is made.
 */
export interface Telemetry {
  tracer: Tracer | undefined;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
}

export const NO_TELEMETRY: Telemetry = { tracer: undefined, forceFlush: async () => {}, shutdown: async () => {} };

/** Starts the exporter when the environment asks for it (the SDK is imported only then). */
export async function createTelemetry(env: NodeJS.ProcessEnv = process.env): Promise<Telemetry> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()) return NO_TELEMETRY;
  const [{ TracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }] = await Promise.all([
    import("@opentelemetry/sdk-trace"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
  ]);
  // The traces endpoint as the OTLP spec derives it; headers and timeouts come from the standard
  // OTEL_EXPORTER_OTLP_* variables, which the exporter reads itself.
  const url = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || `${(env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "").trim().replace(/\/+$/, "")}/v1/traces`;
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ "service.name": env.OTEL_SERVICE_NAME?.trim() || "troupe" }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }), scheduledDelayMillis: 1_000 })],
  });
  return {
    tracer: provider.getTracer("troupe"),
    forceFlush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/;

/** Random bytes for trace ids, filled 256 ids at a time (a call to the generator for each request showed in the request path's profile). */
const idPool = Buffer.alloc(16 * 256);
let idOffset = idPool.length;

/** A new random trace id (32 hex digits), for logs when no trace came with the request. */
export function newTraceId(): string {
  if (idOffset >= idPool.length) {
    randomFillSync(idPool);
    idOffset = 0;
  }
  const id = idPool.toString("hex", idOffset, idOffset + 16);
  idOffset += 16;
  return id;
}

/**
 * The trace a request belongs to: the one its W3C `traceparent` header names (with that header as
 * the parent of the spans it causes), or a new trace id with no parent.
 */
export function traceOfRequest(traceparent: string | string[] | undefined): { traceId: string; parent?: Context } {
  const header = Array.isArray(traceparent) ? traceparent[0] : traceparent;
  const match = header ? TRACEPARENT.exec(header.trim().toLowerCase()) : null;
  if (match && !/^0+$/.test(match[1] as string) && !/^0+$/.test(match[2] as string)) {
    const traceId = match[1] as string;
    const spanContext = { traceId, spanId: match[2] as string, traceFlags: Number.parseInt(match[3] as string, 16) & TraceFlags.SAMPLED, isRemote: true };
    return { traceId, parent: trace.setSpanContext(ROOT_CONTEXT, spanContext) };
  }
  return { traceId: newTraceId() };
}
