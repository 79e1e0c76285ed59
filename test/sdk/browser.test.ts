// The SDK in a real headless browser (Chromium through playwright-core) against the real
// server with CORS on: a page served from one origin calls the API on another, so every
// call goes through the browser's CORS checks (preflights for the SDK's headers, exposed
// response headers, streamed bodies). The SDK is bundled for the browser with esbuild, as
// an app's bundler would. Needs Chromium (`apt-get install -y chromium`; .ci/run installs
// it): without it the suite is skipped saying so, and fails under CI.
import { existsSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { build } from 'esbuild';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithService } from '../support/services.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';

const CHROMIUM = process.env.TEST_CHROMIUM_PATH || '/usr/bin/chromium';
const SDK_ENTRY = resolve(import.meta.dirname, '../../sdk/src/index.ts');

type Sdk = typeof import('../../sdk/src/index.js');
/** What the page's code gets: how to reach the API. */
interface Setup {
  apiUrl: string;
  key: string;
  /** A local port nothing listens on: connections to it are refused. */
  closedUrl: string;
}

let pages: http.Server;
let platform: TestPlatform;
let browser: Browser;
/** The allowed origin (http://127.0.0.1:port) and a refused one (http://localhost:port, same server). */
let allowedOrigin: string;
let refusedOrigin: string;
let closedUrl: string;

async function openPage(origin: string): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => 'sdk' in window);
  return page;
}

/** Runs `fn` in a page of `origin`, with the SDK module imported there. */
async function inBrowser<R>(origin: string, fn: (sdk: Sdk, setup: Setup) => Promise<R>): Promise<R> {
  const page = await openPage(origin);
  try {
    const setup: Setup = { apiUrl: platform.apiUrl, key: platform.adminKey, closedUrl };
    // The function is sent to the page as source text: it sees only its arguments.
    return (await page.evaluate(
      async ([source, setup]) => {
        const run = new Function(`return (${source})`)() as (sdk: Sdk, setup: Setup) => Promise<unknown>;
        return run((window as unknown as { sdk: Sdk }).sdk, setup);
      },
      [fn.toString(), setup] as const,
    )) as R;
  } finally {
    await page.close();
  }
}

describeWithService(
  {
    what: `Chromium at ${CHROMIUM}`,
    variable: 'TEST_CHROMIUM_PATH',
    unreachableReason: existsSync(CHROMIUM) ? undefined : 'not installed: apt-get install -y chromium',
  },
  'the SDK in a headless browser, against the server with CORS on',
  () => {
    beforeAll(async () => {
      const bundle = await build({ entryPoints: [SDK_ENTRY], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', write: false, logLevel: 'silent' });
      const sdkSource = bundle.outputFiles[0]!.text;
      pages = http.createServer((req, res) => {
        if (req.url === '/sdk.js') {
          res.writeHead(200, { 'content-type': 'text/javascript' });
          res.end(sdkSource);
        } else {
          res.writeHead(200, { 'content-type': 'text/html' });
          // The page imports the SDK as an app would, and leaves it on `window` for the tests.
          res.end('<!doctype html><title>sdk</title><script type="module">import * as sdk from "/sdk.js"; window.sdk = sdk;</script>');
        }
      });
      await new Promise<void>((done) => pages.listen(0, '127.0.0.1', done));
      const { port } = pages.address() as AddressInfo;
      allowedOrigin = `http://127.0.0.1:${port}`;
      refusedOrigin = `http://localhost:${port}`;
      platform = await startTestPlatform({ corsOrigins: [allowedOrigin] });
      const closed = http.createServer();
      await new Promise<void>((done) => closed.listen(0, '127.0.0.1', done));
      closedUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
      await new Promise((done) => closed.close(done));
      browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      await platform?.close();
      await new Promise((done) => pages?.close(done));
    });

    it('needs its key and base URL given (no environment in a browser), naming the option and the variable', async () => {
      const messages = await inBrowser(allowedOrigin, async (sdk, { apiUrl }) => {
        const failures: string[] = [];
        for (const options of [{ baseUrl: apiUrl }, { apiKey: 'sk_x' }]) {
          try {
            new sdk.Platform(options);
          } catch (error) {
            failures.push(`${(error as Error).constructor.name}: ${(error as Error).message}`);
          }
        }
        return failures;
      });
      expect(messages).toHaveLength(2);
      expect(messages[0]).toMatch(/^PlatformError: Missing API key: pass `apiKey`.*PLATFORM_API_KEY/);
      expect(messages[1]).toMatch(/^PlatformError: Missing base URL: pass `baseUrl`.*PLATFORM_BASE_URL/);
    });

    it('calls the API cross-origin: resource calls, the raw response and its exposed trace id', async () => {
      const result = await inBrowser(allowedOrigin, async (sdk, { apiUrl, key }) => {
        const client = new sdk.Platform({ apiKey: key, baseUrl: apiUrl });
        const completion = await client.chat.completions.create({ model: 'local-chat', messages: [{ role: 'user', content: 'What does hope mean?' }] });
        const { data: models, response, traceId } = await client.models.list().withResponse();
        return {
          origin: location.origin,
          object: completion.object,
          content: completion.choices[0]?.message.content,
          models: models.data.map((m) => m.id),
          status: response.status,
          bodyUsed: response.bodyUsed,
          traceId,
        };
      });
      expect(result.origin).toBe(allowedOrigin);
      expect(result).toMatchObject({ object: 'chat.completion', status: 200, bodyUsed: false });
      expect(result.content?.length).toBeGreaterThan(0);
      expect(result.models).toContain('local-chat');
      expect(result.traceId).toMatch(/^trc_[0-9a-f]{32}$/);
    });

    it('streams: chunks as they come, collect() with the usage, toReadableStream(), and a break that ends the request', async () => {
      const result = await inBrowser(allowedOrigin, async (sdk, { apiUrl, key }) => {
        const client = new sdk.Platform({ apiKey: key, baseUrl: apiUrl });
        const body = { model: 'local-chat', messages: [{ role: 'user' as const, content: 'What does hope mean?' }] };
        const whole = await client.chat.completions.create(body);
        const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
        let chunks = 0;
        for await (const chunk of stream) if ('choices' in chunk && chunk.choices.length) chunks += 1;
        const again = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } });
        const collected = await again.collect();
        const ndjson = await new Response((await client.chat.completions.create({ ...body, stream: true })).toReadableStream()).text();
        const left = await client.chat.completions.create({ ...body, stream: true });
        for await (const _ of left) break;
        return {
          plain: whole.choices[0]?.message.content,
          chunks,
          traceId: stream.traceId,
          text: collected.text,
          finishReason: collected.finishReason,
          totalTokens: collected.usage?.total_tokens,
          ndjsonText: ndjson
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line) as { choices: Array<{ delta: { content?: string } }> })
            .map((event) => event.choices[0]?.delta.content ?? '')
            .join(''),
          leftFinished: left.finished,
        };
      });
      expect(result.chunks).toBeGreaterThan(1);
      expect(result.traceId).toMatch(/^trc_/);
      expect(result.text).toBe(result.plain);
      expect(result.ndjsonText).toBe(result.plain);
      expect(result.finishReason).toBe('stop');
      expect(result.totalTokens).toBeGreaterThan(0);
      expect(result.leftFinished).toBe(true);
    });

    it('gives the typed errors with their trace ids, read across origins', async () => {
      const result = await inBrowser(allowedOrigin, async (sdk, { apiUrl, key }) => {
        const client = new sdk.Platform({ apiKey: key, baseUrl: apiUrl, maxRetries: 0 });
        const noUser = await client.chat.completions.create({ model: 'local-chat', messages: [{ role: 'system', content: 'Be brief.' }] }).catch((e: unknown) => e);
        const badKey = await new sdk.Platform({ apiKey: 'sk_not_a_key', baseUrl: apiUrl, maxRetries: 0 }).models.list().catch((e: unknown) => e);
        const describe = (e: unknown) =>
          e instanceof sdk.APIError ? { api: true, cls: e.constructor.name, name: e.name, status: e.status, traceId: e.traceId, retryable: e.retryable } : { api: false, text: String(e) };
        return { noUser: describe(noUser), badKey: describe(badKey), named: noUser instanceof sdk.NoUserMessageError, auth: badKey instanceof sdk.AuthenticationError };
      });
      expect(result.noUser).toMatchObject({ api: true, name: 'NO_USER_MESSAGE', status: 400, retryable: false });
      expect(result.noUser.traceId).toMatch(/^trc_/);
      expect(result.named).toBe(true);
      expect(result.badKey).toMatchObject({ api: true, status: 401 });
      expect(result.badKey.traceId).toMatch(/^trc_/);
      expect(result.auth).toBe(true);
    });

    it('reports a call refused by CORS (an origin the server does not allow) as APIConnectionError naming the URL', async () => {
      const result = await inBrowser(refusedOrigin, async (sdk, { apiUrl, key }) => {
        const client = new sdk.Platform({ apiKey: key, baseUrl: apiUrl, maxRetries: 0 });
        const error = await client.models.list().catch((e: unknown) => e);
        return { origin: location.origin, connection: error instanceof sdk.APIConnectionError, message: (error as Error).message };
      });
      expect(result.origin).toBe(refusedOrigin);
      expect(result.connection).toBe(true);
      expect(result.message).toContain(`${platform.apiUrl}/ai/v2/models`);
    });

    it('reports a refused connection fast with the default retries (the browser gives no error code), naming the URL', async () => {
      const result = await inBrowser(allowedOrigin, async (sdk, { closedUrl, key }) => {
        const delays: number[] = [];
        const client = new sdk.Platform({ apiKey: key, baseUrl: closedUrl, onRetry: (event) => delays.push(event.delayMs) });
        const started = performance.now();
        const error = await client.models.list().catch((e: unknown) => e);
        return { elapsed: performance.now() - started, delays, connection: error instanceof sdk.APIConnectionError, message: (error as Error).message };
      });
      expect(result.connection).toBe(true);
      expect(result.message).toContain(`Could not reach ${closedUrl}/ai/v2/models`);
      expect(result.message).toContain('gave up after 3 attempts');
      expect(result.delays).toHaveLength(2);
      expect(result.elapsed).toBeLessThan(3000); // was about 15 s (1 + 2 + 4 + 8 s backoff)
    });
  },
);
