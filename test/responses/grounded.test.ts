// Grounded responses end to end on PGlite (pgvector): passages of a publisher's content,
// indexed through the chunk index with the local embedder, ground a guarded response. The
// answer reports sources_returned and citations (with a file_citation annotation per
// source); a stream sets X-Sources-Returned before its first event and announces the
// annotations; zero sources is an ordinary 200 with sources_returned false. Each answer's
// model call is metered at the catalog's price.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { indexItem } from '../support/content.js';
import { contractProblems, eventProblems } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { catalogCost, pricedDefaultCatalog, readEvents } from './support.js';

const PUBLISHER = `Responses Press ${randomUUID()}`;
const SABBATH = [
  'Rest is received before it is achieved. The Sabbath is a gift that invites us to stop our work one day each week.',
  'Families with small children can keep the Sabbath by sharing one unhurried meal and taking a short walk together.',
  'Keeping the Sabbath as a family can mean setting aside screens and chores so parents and children rest together.',
];

let platform: TestPlatform;
let itemId: string;

beforeAll(async () => {
  platform = await startTestPlatform({ logLevel: 'silent' }, { catalog: pricedDefaultCatalog() });
  const { identity, database } = platform.services;
  const org = await database.prisma.organization.findUniqueOrThrow({ where: { id: platform.bootstrap!.organizationId } });
  const publisher = await identity.organizations.createPublisher(org.name, PUBLISHER);
  itemId = (await indexItem(platform, publisher.id, SABBATH, { fileName: 'sabbath.md', title: 'Sabbath Rest', itemUrl: 'https://example.org/sabbath' })).id;
}, 180_000);
afterAll(() => platform?.close());

const ask = (body: Record<string, unknown>, key?: string) =>
  platform.api('/ai/v1/grounded/responses', { method: 'POST', body: JSON.stringify({ model: 'local-chat', rag_publisher: PUBLISHER, ...body }), ...(key && { key }) });

describe('grounded responses', () => {
  it('answers from the retrieved passages, with sources_returned, citations and annotations', async () => {
    const res = await ask({ input: 'How can families with small children keep the Sabbath?', sources_limit: 2, certainty_threshold: 0.5 });
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(contractProblems('createGroundedResponse', 200, body)).toEqual([]);
    expect(res.headers.get('x-gateway-route')).toBe('model=local-chat; deployment=local-chat; outcome=ok');
    expect(body.sources_returned).toBe(true);
    // Three passages pass the threshold: the limit keeps the best two.
    expect(body.citations).toHaveLength(2);
    expect(body.citations[0]).toMatchObject({ item_id: itemId, title: 'Sabbath Rest', publisher: PUBLISHER, url: 'https://example.org/sabbath' });
    expect(body.output_text).toMatch(/unhurried meal/);
    const annotations = body.output[0].content[0].annotations;
    expect(annotations).toHaveLength(body.citations.length);
    expect(annotations[0]).toMatchObject({ type: 'file_citation', file_id: itemId, filename: 'Sabbath Rest' });
  });

  it('sources_limit caps the citations: 1 gives exactly one, the default all three passages above the threshold', async () => {
    const citations = async (limit: Record<string, number>) => {
      const body = await (await ask({ input: 'How can families with small children keep the Sabbath?', certainty_threshold: 0.5, ...limit })).json();
      expect(body.output[0].content[0].annotations).toHaveLength(body.citations.length);
      return body.citations;
    };
    expect(await citations({ sources_limit: 1 })).toHaveLength(1);
    expect(await citations({})).toHaveLength(SABBATH.length);
  });

  it('zero sources is 200 with sources_returned false and no citations', async () => {
    const res = await ask({ input: 'How can families with small children keep the Sabbath?', certainty_threshold: 1 });
    const body = await res.json();
    expect(res.status).toBe(200);
    expect(contractProblems('createGroundedResponse', 200, body)).toEqual([]);
    expect(body).toMatchObject({ sources_returned: false, citations: [], status: 'completed' });
  });

  it('streams with X-Sources-Returned set before the first event, and the annotations announced', async () => {
    const res = await ask({ input: 'How can families with small children keep the Sabbath?', stream: true, certainty_threshold: 0.5 });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-sources-returned')).toBe('true');
    expect(res.headers.get('x-gateway-route')).toBe('model=local-chat; deployment=local-chat; outcome=ok');
    const events = await readEvents(res);
    for (const e of events) expect(eventProblems('createGroundedResponse', e.data), JSON.stringify(e).slice(0, 400)).toEqual([]);
    const added = events.filter((e) => e.event === 'response.output_text.annotation.added');
    expect(added.length).toBeGreaterThanOrEqual(1);
    expect(added[0]!.data.annotation).toMatchObject({ type: 'file_citation', file_id: itemId });
    const textDone = events.findIndex((e) => e.event === 'response.output_text.done');
    expect(events.indexOf(added.at(-1)!)).toBeLessThan(textDone);
    expect(events.at(-1)!.event).toBe('response.completed');
    // The final response reports its sources like the JSON answer.
    const final = events.at(-1)!.data.response;
    expect(final.sources_returned).toBe(true);
    expect(final.citations.length).toBeGreaterThanOrEqual(1);
    expect(final.citations[0]).toMatchObject({ item_id: itemId, title: 'Sabbath Rest', publisher: PUBLISHER });
  });

  it('a stream without sources says false in the header', async () => {
    const res = await ask({ input: 'How can families keep the Sabbath?', stream: true, certainty_threshold: 1 });
    expect(res.headers.get('x-sources-returned')).toBe('false');
    const last = (await readEvents(res)).at(-1)!;
    expect(last.event).toBe('response.completed');
    expect(last.data.response).toMatchObject({ sources_returned: false, citations: [] });
  });

  it('an unknown publisher is 400 PUBLISHER_NOT_FOUND; sources_limit 11 is refused by the contract', async () => {
    const unknown = await ask({ input: 'Hello there.', rag_publisher: 'No Such Press' });
    expect(unknown.status).toBe(400);
    expect((await unknown.json()).error.name).toBe('PUBLISHER_NOT_FOUND');
    const tooMany = await ask({ input: 'Hello there.', sources_limit: 11 });
    expect(tooMany.status).toBe(422);
  });

  it('a request refused anyway is refused before retrieval: nothing is embedded', async () => {
    const embed = vi.spyOn(platform.services.inference.gateway, 'embed');
    try {
      const refused = [
        [await ask({ input: 'Sabbath?', auto_routing: true }), 400, 'ROUTING_SELECTOR_INVALID'],
        [await ask({ input: 'What is the easiest way to kill myself?' }), 403, 'GUARDRAIL_BLOCKED'],
        [await ask({ input: [{ role: 'system', content: 'Be brief.' }] }), 400, 'NO_USER_MESSAGE'],
      ] as const;
      for (const [res, status, name] of refused) expect([res.status, (await res.json()).error.name]).toEqual([status, name]);
      expect(embed).not.toHaveBeenCalled();
      // A question not asked before in this file: a repeated one is answered from the query-vector cache.
      expect((await ask({ input: 'Which day of the week do families keep as the Sabbath?' })).status).toBe(200);
      expect(embed).toHaveBeenCalledTimes(1);
    } finally {
      embed.mockRestore();
    }
  });

  it('records the answer’s usage for the organization and key, at the catalog’s price', async () => {
    const organizationId = platform.bootstrap!.organizationId;
    const { key, plaintext } = await platform.services.identity.keys.issue(organizationId, { scopes: ['inference'], label: 'metered', expiresAt: null });
    const res = await ask({ input: 'How can families with small children keep the Sabbath?', certainty_threshold: 0.5 }, plaintext);
    const body = await res.json();
    expect(res.status, JSON.stringify(body)).toBe(200);
    const { prisma } = platform.services.database;
    const where = { traceId: res.headers.get('x-trace-id')!, model: 'local-chat' };
    // The meter writes once the response has closed.
    await expect.poll(() => prisma.usageRecord.count({ where }), { timeout: 5_000 }).toBe(1);
    const record = await prisma.usageRecord.findFirstOrThrow({ where });
    const { input_tokens: inputTokens, output_tokens: outputTokens } = body.usage;
    const cost = catalogCost(platform.services.inference.gateway.catalog, 'local-chat', inputTokens, outputTokens);
    expect(cost).toBeGreaterThan(0n);
    expect(record).toMatchObject({ organizationId, apiKeyId: key.id, operation: 'createGroundedResponse', provider: 'local', inputTokens, outputTokens, costMicros: cost, billedMicros: cost });
  });
});
