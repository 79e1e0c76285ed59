// The OpenTelemetry SDK behind tracing.ts, imported only when OTEL_EXPORTER_OTLP_ENDPOINT
// is set. Spans go in batches to the endpoint's /v1/traces as OTLP/HTTP JSON (the exporter
// reads the other OTEL_EXPORTER_OTLP_* variables itself: headers, timeout, compression);
// OTEL_SERVICE_NAME names the service.
import { context, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { Logger } from 'pino';
import type { RequestTrace, SpanAttributes, TraceSpan, Tracing } from './tracing.js';

export function otlpTracing(endpoint: string, serviceName: string, logger: Logger): Tracing {
  const url = `${endpoint.replace(/\/+$/, '')}/v1/traces`;
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }) })],
  });
  const tracer = provider.getTracer('inference-platform');
  logger.info({ url }, 'traces are exported over OTLP/HTTP');
  return {
    enabled: true,
    request: (name, attributes) => new RequestSpan(tracer, tracer.startSpan(name, { attributes: defined(attributes) })),
    async close() {
      await provider.shutdown().catch((error) => logger.warn({ err: error }, 'could not export the last traces'));
    },
  };
}

/** OpenTelemetry refuses undefined attribute values: they are left out. */
function defined(attributes: SpanAttributes | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(attributes ?? {})) if (value !== undefined) out[key] = value;
  return out;
}

class OtelSpan implements TraceSpan {
  private ended = false;

  constructor(protected readonly otel: Span) {}

  set(attributes: SpanAttributes): void {
    if (!this.ended) this.otel.setAttributes(defined(attributes));
  }

  fail(error: unknown): void {
    if (this.ended) return;
    const err = error instanceof Error ? error : new Error(String(error));
    this.otel.recordException(err);
    this.otel.setAttribute('error.type', (error as { errorName?: string; kind?: string }).errorName ?? (error as { kind?: string }).kind ?? err.name);
    this.otel.setStatus({ code: SpanStatusCode.ERROR, message: err.message.slice(0, 200) });
    this.end();
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.otel.end();
  }
}

class RequestSpan extends OtelSpan implements RequestTrace {
  private readonly parent = trace.setSpan(context.active(), this.otel);

  constructor(
    private readonly tracer: Tracer,
    span: Span,
  ) {
    super(span);
  }

  span(name: string, attributes?: SpanAttributes): TraceSpan {
    return new OtelSpan(this.tracer.startSpan(name, { attributes: defined(attributes) }, this.parent));
  }
}
