// Request tracing: a span for the request, and below it routing, each upstream attempt,
// guardrails and billing, with the OpenTelemetry GenAI semantic-convention attributes
// (gen_ai.request.model, gen_ai.response.model, gen_ai.provider.name and gen_ai.system,
// gen_ai.usage.input_tokens / output_tokens). Exported over OTLP/HTTP (otel.ts) only when
// OTEL_EXPORTER_OTLP_ENDPOINT is set; otherwise the SDK is never imported, `request()`
// answers null, and every call site's `trace?.…` costs one property read.
//
// Parents are passed explicitly (a request's RequestTrace travels with its context, as its
// usage meter does), not through OpenTelemetry's AsyncLocalStorage context manager: on
// Node 20 an active store installs promise hooks that every promise of the process pays for.
import type { Logger } from 'pino';
import type { Config } from '../config.js';

export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** One operation of a request: set what becomes known, then end it (once; later calls are ignored). */
export interface TraceSpan {
  set(attributes: SpanAttributes): void;
  /** Ends the span as failed, with the error recorded. */
  fail(error: unknown): void;
  end(): void;
}

/** A request's root span, and the spans of what it does. */
export interface RequestTrace extends TraceSpan {
  /** A child of the request span. */
  span(name: string, attributes?: SpanAttributes): TraceSpan;
}

export interface Tracing {
  /** Off: no span is ever made (the request stage is not even installed). */
  readonly enabled: boolean;
  /** A new request's trace; null when tracing is off. */
  request(name: string, attributes: SpanAttributes): RequestTrace | null;
  /** Exports what is still buffered and stops. */
  close(): Promise<void>;
}

const off: Tracing = { enabled: false, request: () => null, close: async () => undefined };

/** Tracing as configured: OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT, else off (no SDK loaded). */
export async function createTracing(config: Pick<Config, 'otlpEndpoint' | 'otelServiceName'>, logger: Logger): Promise<Tracing> {
  if (!config.otlpEndpoint) return off;
  const { otlpTracing } = await import('./otel.js');
  return otlpTracing(config.otlpEndpoint, config.otelServiceName, logger);
}

/** The span of `work`, ended (failed when it throws) when it settles; `work` runs as it would without tracing. */
export async function traced<T>(trace: RequestTrace | null | undefined, name: string, attributes: SpanAttributes, work: () => Promise<T>): Promise<T> {
  if (!trace) return work();
  const span = trace.span(name, attributes);
  try {
    const value = await work();
    span.end();
    return value;
  } catch (error) {
    span.fail(error);
    throw error;
  }
}
