// Recovery in seconds: an open circuit gets trial calls (a one-token request) on a short
// jittered schedule, one at a time, and closes as soon as one is answered. The schedule on a
// fake clock (the defaults keep recovery under 10 s); the runner against a scripted
// provider on a short schedule.
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { buildCatalog, type Catalog } from '../../server/gateway/catalog.js';
import { CircuitTrials, everyInstance, type TrialGate } from '../../server/gateway/circuit-trials.js';
import { DeploymentHealth } from '../../server/gateway/health.js';
import { ProviderError, type ChatRequest, type Provider } from '../../server/providers/types.js';

const log = pino({ level: 'silent' });

function catalogOf(circuit: Record<string, unknown> = {}, deployment: Record<string, unknown> = {}): Catalog {
  return buildCatalog(
    {
      providers: [{ id: 'p', type: 'openai', base_url: 'http://127.0.0.1:9/v1' }],
      deployments: [{ id: 'd', provider: 'p', model: 'upstream-model', ...deployment }],
      models: [{ id: 'm', family: 'openai', context_window: 1000, max_output_tokens: 100, deployments: ['d'] }],
      routing: { tiers: { tier_1: ['m'], tier_2: ['m'], tier_3: ['m'] } },
      circuit: { failure_threshold: 1, ...circuit },
    },
    'test',
    {},
  );
}

const down = { ok: false, error: '503', countsAsFailure: true } as const;

describe('the trial schedule', () => {
  it('tries an open circuit soon, then doubles the wait per failed trial up to trial_max_ms, jittered: healed within 10 s by default', () => {
    let now = 1_000_000;
    const catalog = catalogOf();
    expect(catalog.circuit).toMatchObject({ trial_ms: 1_000, trial_max_ms: 5_000, trial_timeout_ms: 3_000 });
    const health = new DeploymentHealth(catalog, () => now);
    const waits: number[] = [];
    health.onTrialScheduled((_id, at) => waits.push(at - now));
    health.begin('d')(down);
    expect(health.circuit('d')).toBe('open');
    for (let i = 0; i < 8; i++) {
      now += waits.at(-1)!;
      expect(health.trialAt('d')).toBe(now);
      health.beginTrial('d')({ ok: false, error: 'still 503' });
    }
    const bounds = [1_000, 2_000, 4_000, 5_000, 5_000, 5_000, 5_000, 5_000, 5_000];
    waits.forEach((wait, i) => {
      expect(wait).toBeGreaterThanOrEqual(bounds[i] / 2);
      expect(wait).toBeLessThanOrEqual(bounds[i]);
    });
    // Healed just after a trial failed: the next trial at most trial_max_ms later, itself answered within its timeout.
    expect(catalog.circuit.trial_max_ms + catalog.circuit.trial_timeout_ms).toBeLessThan(10_000);
  });

  it('keeps traffic away while a trial runs (half-open), and closes on its answer', () => {
    let now = 1_000_000;
    const health = new DeploymentHealth(catalogOf(), () => now);
    health.begin('d')(down);
    now += 1_000;
    const end = health.beginTrial('d');
    expect([health.circuit('d'), health.available('d'), health.trialAt('d')]).toEqual(['half_open', false, null]);
    end({ ok: true });
    expect([health.circuit('d'), health.available('d'), health.snapshot('d').nextTrialAt]).toEqual(['closed', true, null]);
  });

  it("waits out a failed trial's Retry-After (up to trial_max_ms)", () => {
    let now = 1_000_000;
    const health = new DeploymentHealth(catalogOf(), () => now);
    health.begin('d')(down);
    now += 1_000;
    health.beginTrial('d')({ ok: false, error: '429', retryAfterMs: 4_000 });
    expect(health.snapshot('d').nextTrialAt! - now).toBeGreaterThanOrEqual(4_000);
    now += 5_000;
    health.beginTrial('d')({ ok: false, error: '429', retryAfterMs: 3_600_000 });
    expect(health.snapshot('d').nextTrialAt! - now).toBe(5_000);
  });

  it('schedules nothing with trial_ms 0: the cooldown alone reopens the circuit', () => {
    let now = 1_000_000;
    const health = new DeploymentHealth(catalogOf({ trial_ms: 0, cooldown_ms: 5_000 }), () => now);
    health.begin('d')(down);
    expect([health.trialAt('d'), health.snapshot('d').nextTrialAt]).toEqual([null, now + 5_000]);
  });
});

/** A provider down for its first `failing` calls, recording each request and how many ran at once. */
function recovering(failing: number, delayMs = 5) {
  const requests: ChatRequest[] = [];
  let running = 0;
  let most = 0;
  const provider: Provider = {
    id: 'p',
    kind: 'openai',
    async chat(request) {
      requests.push(request);
      most = Math.max(most, ++running);
      await sleep(delayMs);
      running--;
      if (requests.length <= failing) throw new ProviderError('unavailable', 'upstream 503: overloaded', { status: 503 });
      return { content: 'H', finishReason: 'length', usage: { promptTokens: 1, completionTokens: 1 } };
    },
    chatStream: () => {
      throw new Error('not used');
    },
    embed: async () => ({ vectors: [[1]] }),
    probe: async () => undefined,
    close: async () => undefined,
  };
  return { provider, requests, most: () => most };
}

async function until(check: () => boolean, limitMs = 3_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > limitMs) throw new Error('condition not met in time');
    await sleep(5);
  }
}

describe('trial calls', () => {
  const short = { trial_ms: 20, trial_max_ms: 60, trial_timeout_ms: 500 };

  /** Opens the circuit of `d` with trial calls running against `upstream`; resolves once they closed it. */
  async function recover(catalog: Catalog, upstream: ReturnType<typeof recovering>, gate: TrialGate = everyInstance): Promise<DeploymentHealth> {
    const health = new DeploymentHealth(catalog);
    const trials = new CircuitTrials(catalog, new Map([['p', upstream.provider]]), health, gate, log);
    health.begin('d')(down);
    await until(() => health.circuit('d') === 'closed');
    trials.stop();
    return health;
  }

  it('are minimal real calls, one at a time, until one is answered: then the circuit closes', async () => {
    const upstream = recovering(3);
    const health = await recover(catalogOf(short), upstream);
    expect(upstream.requests).toHaveLength(4);
    expect(upstream.requests[0]).toMatchObject({ model: 'upstream-model', maxTokens: 1, messages: [{ role: 'user', content: 'Hi' }] });
    expect(upstream.most()).toBe(1);
    // The failure's kind and status: upstream text (which may echo a key) stays out.
    expect(health.snapshot('d')).toMatchObject({ lastError: 'unavailable (HTTP 503)' });
  });

  it("send the deployment's own probe request when one is set", async () => {
    const upstream = recovering(0);
    await recover(catalogOf(short, { probe: { prompt: 'Say OK.', max_tokens: 3 } }), upstream);
    expect(upstream.requests[0]).toMatchObject({ maxTokens: 3, messages: [{ role: 'user', content: 'Say OK.' }] });
  });

  it('leave a trial slot another instance took, and try again a wait later', async () => {
    const upstream = recovering(0);
    let asked = 0;
    await recover(catalogOf(short), upstream, async () => ++asked > 2);
    expect([asked, upstream.requests.length]).toEqual([3, 1]);
  });
});
