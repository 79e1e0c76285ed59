// Helpers of the Responses API suites: catalogs around given chat models (with the local
// embedding model search needs at start), the client suites' catalog, a priced built-in
// catalog, and reading a named-event SSE answer.
import { buildCatalog, defaultConfig, type Catalog } from '../../server/gateway/catalog.js';

interface ChatSetup {
  providers?: unknown[];
  deployments: unknown[];
  models: ({ id: string } & Record<string, unknown>)[];
  failover?: unknown;
  timeouts?: unknown;
  /** Circuit settings beside probe_interval_ms: 0 (e.g. a high failure_threshold to keep circuits closed). */
  circuit?: Record<string, unknown>;
}

/** A catalog of the given chat models (every tier tries them in order) plus local-embedding. */
export function catalogOf(setup: ChatSetup): Catalog {
  const ids = setup.models.map((m) => m.id);
  return buildCatalog(
    {
      providers: [{ id: 'local', type: 'local' }, ...(setup.providers ?? [])],
      deployments: [{ id: 'local-embedding', provider: 'local', model: 'local-embedding' }, ...setup.deployments],
      models: [{ id: 'local-embedding', family: 'local', type: 'embedding', context_window: 2_048, dimensions: 512, shortenable: true, deployments: ['local-embedding'] }, ...setup.models],
      routing: { tiers: { tier_1: ids, tier_2: ids, tier_3: ids } },
      circuit: { probe_interval_ms: 0, ...setup.circuit },
      ...(setup.failover ? { failover: setup.failover } : {}),
      ...(setup.timeouts ? { timeouts: setup.timeouts } : {}),
    },
    'responses test',
    {},
  );
}

/**
 * The client suites' catalog: local-chat (tools, image generation) and `vision`, a vision
 * model on an OpenAI-compatible upstream. Streams are not resumed, so a break reaches the client.
 */
export function clientCatalog(visionUrl: string): Catalog {
  return catalogOf({
    providers: [{ id: 'vision-up', type: 'openai', base_url: `${visionUrl}/v1` }],
    deployments: [
      { id: 'local-chat', provider: 'local', model: 'local-chat' },
      { id: 'd-vision', provider: 'vision-up', model: 'upstream-vision' },
    ],
    models: [
      { id: 'local-chat', family: 'local', context_window: 32_768, max_output_tokens: 4_096, capabilities: { tools: true, image_generation: true }, deployments: ['local-chat'] },
      { id: 'vision', family: 'openai', context_window: 32_768, max_output_tokens: 4_096, capabilities: { tools: true, vision: true }, deployments: ['d-vision'] },
    ],
    failover: { max_attempts: 3, retry_after_cap_ms: 0, resume_streams: false, routes: {} },
    circuit: { failure_threshold: 1_000, failure_rate: null },
  });
}

/** A 1x1 PNG as a data URL. */
export const PIXEL = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';

/** The built-in catalog with local-chat priced (whole micro-dollars per token), so its usage rows carry a cost to check. */
export function pricedDefaultCatalog(): Catalog {
  const config = defaultConfig({}) as { models: { id: string }[] };
  const pricing = { input_per_1m: 1_000, output_per_1m: 2_000 };
  return buildCatalog({ ...config, models: config.models.map((m) => (m.id === 'local-chat' ? { ...m, pricing } : m)) }, 'responses test (priced)', {});
}

/** What the tokens cost at the catalog's price: a price per 1M tokens is micro-dollars per token. */
export function catalogCost(catalog: Catalog, modelId: string, inputTokens: number, outputTokens: number): bigint {
  const { pricing } = catalog.models.get(modelId)!;
  return BigInt(inputTokens) * BigInt(pricing.input_per_1m) + BigInt(outputTokens) * BigInt(pricing.output_per_1m);
}

export interface NamedEvent {
  event: string;
  data: any;
}

/** The events of a named-event SSE answer, in order. */
export async function readEvents(res: Response): Promise<NamedEvent[]> {
  return (await res.text())
    .split('\n\n')
    .filter((frame) => frame.trim())
    .map((frame) => {
      const event = /^event: (.*)$/m.exec(frame)?.[1] ?? '';
      const data = /^data: (.*)$/m.exec(frame)?.[1] ?? 'null';
      return { event, data: JSON.parse(data) };
    });
}
