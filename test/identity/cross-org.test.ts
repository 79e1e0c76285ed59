// The cross-organization matrix: for every operation that names a resource (an id, a
// publisher, a tenant), organization B's key against organization A's resources gets
// 403 or 404 and never A's data. Where the contract answers an unknown publisher or tenant
// name with 400 (spec part 7), B gets that same 400, word for word: A's name is as unknown
// to B as one that exists nowhere. Runs on PGlite and on PostgreSQL.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes, type OperationId } from '../../generated/contract/routes.js';
import { deref } from '../../scripts/codegen/contract.js';
import { contractDocument } from '../support/contract.js';
import { startTestPlatform, type TestPlatform } from '../support/platform.js';
import { describePostgres, useTestDatabase } from '../support/postgres.js';

/** Request fields that name another resource. */
const RESOURCE_FIELDS = ['item_id', 'item_ids', 'publisher_id', 'producer_id', 'agent_id', 'key_id', 'rag_publisher', 'tenant', 'publishers', 'chat_id', 'message_id'];

function namedResources(operationId: OperationId): string[] {
  const route = routes.find((r) => r.operationId === operationId)!;
  const item = contractDocument.paths[route.path];
  const op = item[route.method];
  const names = new Set<string>();
  for (const p of [...(item.parameters ?? []), ...(op.parameters ?? [])]) names.add(deref(contractDocument, p).name);
  const collect = (schema: any, depth: number) => {
    const s = deref(contractDocument, schema);
    if (!s || depth > 3) return;
    for (const [name, prop] of Object.entries<any>(s.properties ?? {})) {
      names.add(name);
      collect(prop, depth + 1);
    }
    for (const part of [...(s.allOf ?? []), ...(s.oneOf ?? []), ...(s.anyOf ?? [])]) collect(part, depth);
  };
  const content = op.requestBody ? deref(contractDocument, op.requestBody).content : {};
  for (const media of Object.values<any>(content ?? {})) collect(media.schema, 0);
  return RESOURCE_FIELDS.filter((f) => names.has(f));
}

interface World {
  a: { agentId: string; keyId: string; publisherId: string; publisherName: string; itemId: string; chatId: string; messageId: string };
  bKey: string;
  secrets: string[];
}

type Attempt = (platform: TestPlatform, world: World) => Promise<Response>;
const json = (method: string, body: unknown) => ({ method, body: JSON.stringify(body) });

const grounded = (w: World) => ({ auto_routing: true, messages: [{ role: 'user', content: 'secret' }], rag_publisher: w.a.publisherName });

const CASES: Partial<Record<OperationId, Attempt>> = {
  createGroundedChatCompletion: (p, w) => p.api('/ai/v2/grounded/chat/completions', { key: w.bKey, ...json('POST', grounded(w)) }),
  createGroundedChatCompletionAlias: (p, w) => p.api('/ai/v2/chat/completions/grounded', { key: w.bKey, ...json('POST', grounded(w)) }),
  createGroundedResponse: (p, w) => p.api('/ai/v1/grounded/responses', { key: w.bKey, ...json('POST', { auto_routing: true, input: 'secret', rag_publisher: w.a.publisherName }) }),
  sendChatMessage: (p, w) => p.api('/ai/v1/message', { key: w.bKey, ...json('POST', { query: 'secret', publishers: [w.a.publisherName] }) }),
  getChat: (p, w) => p.api(`/ai/v1/chat?chat_id=${w.a.chatId}`, { key: w.bKey }),
  deleteMessage: (p, w) => p.api(`/ai/v1/message?message_id=${w.a.messageId}`, { key: w.bKey, method: 'DELETE' }),
  getPaywallRelated: (p, w) =>
    p.api('/ai/v1/kallm/paywall/related', { key: w.bKey, ...json('POST', { request: { producer_id: 'a-producer' }, request_body: { collection: 'GlooProd', tenant: w.a.publisherName } }) }),
  getAgent: (p, w) => p.mgmt(`/api/v1/agents/${w.a.agentId}`, { key: w.bKey }),
  updateAgent: (p, w) => p.mgmt(`/api/v1/agents/${w.a.agentId}`, { key: w.bKey, ...json('PATCH', { name: 'stolen' }) }),
  deleteAgent: (p, w) => p.mgmt(`/api/v1/agents/${w.a.agentId}`, { key: w.bKey, method: 'DELETE' }),
  getKey: (p, w) => p.mgmt(`/api/v1/keys/${w.a.keyId}`, { key: w.bKey }),
  revokeKey: (p, w) => p.mgmt(`/api/v1/keys/${w.a.keyId}`, { key: w.bKey, method: 'DELETE' }),
  updateKey: (p, w) => p.mgmt(`/api/v1/keys/${w.a.keyId}`, { key: w.bKey, ...json('PATCH', { label: 'stolen', limits: { weeklyCapMicros: 1 } }) }),
  listIngestionFailures: (p, w) => p.mgmt(`/api/v1/ingestion/failures?publisher_id=${w.a.publisherId}`, { key: w.bKey }),
  retryIngestion: (p, w) => p.mgmt(`/api/v1/ingestion/items/${w.a.itemId}/retry`, { key: w.bKey, method: 'POST' }),
  getFile: (p, w) => p.api(`/engine/v1/files/${w.a.itemId}`, { key: w.bKey }),
  getItem: (p, w) => p.api(`/engine/v2/items/${w.a.itemId}`, { key: w.bKey }),
  ingestFiles: (p, w) => {
    const form = new FormData();
    form.set('publisher_id', w.a.publisherId);
    form.append('files', new Blob(['planted by B']), 'b.txt');
    return p.api('/ingestion/v2/files', { key: w.bKey, method: 'POST', body: form });
  },
  realTimeUpload: (p, w) => p.api('/ingestion/v1/real_time_upload', { key: w.bKey, ...json('POST', { publisher_id: w.a.publisherId, content: 'planted by B' }) }),
  postItem: (p, w) => p.api('/engine/v2/item', { key: w.bKey, ...json('POST', { publisher_id: w.a.publisherId, item_id: w.a.itemId, item_title: 'stolen' }) }),
  patchItem: (p, w) => p.api('/engine/v2/item', { key: w.bKey, ...json('PATCH', { publisher_id: w.a.publisherId, item_id: w.a.itemId, item_title: 'stolen' }) }),
  patchItems: (p, w) =>
    p.api(`/engine/v2/items?publisher_id=${w.a.publisherId}`, {
      key: w.bKey,
      ...json('PATCH', { filter: { item_ids: [w.a.itemId] }, ops: [{ op: 'replace', field: 'evergreen', value: true }] }),
    }),
  deleteItems: (p, w) => p.api('/engine/v2/items', { key: w.bKey, ...json('DELETE', { item_ids: [w.a.itemId] }) }),
  getItemsByProducer: (p, w) => p.api(`/engine/v2/publisher/${w.a.publisherId}/items/by-producer`, { key: w.bKey, ...json('POST', { producer_ids: ['a-producer'] }) }),
  listPublisherItems: (p, w) => p.api(`/engine/v2/publisher/${w.a.publisherId}/items`, { key: w.bKey }),
  searchCollection: (p, w) => p.api('/ai/v1/data/search', { key: w.bKey, ...json('POST', { query: 'secret', collection: 'GlooProd', tenant: w.a.publisherName }) }),
  searchCollectionAlias: (p, w) => p.api('/ai/data/v1/search', { key: w.bKey, ...json('POST', { query: 'secret', collection: 'GlooProd', tenant: w.a.publisherName }) }),
  getRecommendations: (p, w) =>
    p.api('/ai/v1/data/items/recommendations/base', { key: w.bKey, ...json('POST', { query: 'secret', collection: 'GlooProd', tenant: w.a.publisherName }) }),
  getRecommendationsVerbose: (p, w) =>
    p.api('/ai/v1/data/items/recommendations/verbose', { key: w.bKey, ...json('POST', { query: 'secret', collection: 'GlooProd', tenant: w.a.publisherName }) }),
  getAffiliateReferencedItems: (p, w) => p.api('/ai/v1/data/affiliates/referenced-items', { key: w.bKey, ...json('POST', { query: 'secret', publishers: [w.a.publisherName] }) }),
};

async function buildWorld(platform: TestPlatform): Promise<World> {
  const { identity, database, agents } = platform.services;
  const orgA = await identity.organizations.findOrganization('default');
  const publisherA = await identity.organizations.createPublisher('default', `a-press-${randomUUID()}`);
  const orgB = await identity.organizations.createOrganization(`b-${randomUUID()}`);
  await identity.organizations.createPublisher(orgB.name, `b-press-${randomUUID()}`);
  const bKey = (await identity.keys.issue(orgB.id, { scopes: ['inference', 'data:read', 'data:write', 'agents:read', 'agents:write', 'keys:manage', 'chat'] })).plaintext;
  const agent = await agents.create(orgA.id, { name: 'A secret agent', instructions: 'A-SECRET-INSTRUCTIONS' });
  const keyA = (await identity.keys.issue(orgA.id, { scopes: ['inference'], label: 'A-SECRET-LABEL' })).key;
  const item = await database.prisma.item.create({
    data: { publisherId: publisherA.id, fileName: 'a-secret.pdf', title: 'A-SECRET-TITLE', producerId: 'a-producer', etag: randomUUID() },
  });
  const chat = await database.prisma.chat.create({ data: { organizationId: orgA.id } });
  const message = await database.prisma.message.create({ data: { chatId: chat.id, role: 'user', content: 'A-SECRET-QUESTION' } });
  return {
    a: { agentId: agent.id, keyId: keyA.id, publisherId: publisherA.id, publisherName: publisherA.name, itemId: item.id, chatId: chat.id, messageId: message.id },
    bKey,
    secrets: ['A secret agent', 'A-SECRET-INSTRUCTIONS', 'A-SECRET-LABEL', 'A-SECRET-TITLE', 'a-secret.pdf', 'A-SECRET-QUESTION', orgA.id, keyA.keyPrefix],
  };
}

function matrix(start: () => Promise<TestPlatform>) {
  let platform: TestPlatform;
  let world: World;
  beforeAll(async () => {
    platform = await start();
    world = await buildWorld(platform);
  });
  afterAll(() => platform?.close());

  const covered = routes.filter((r) => namedResources(r.operationId).length > 0);

  it('covers every operation that names a resource', () => {
    for (const route of covered) {
      expect(CASES[route.operationId], `${route.operationId} needs a cross-organization case`).toBeDefined();
    }
    console.log(`cross-organization matrix: ${Object.keys(CASES).length} operations checked`);
  });

  it.each(Object.entries(CASES))('%s: B gets 403 or 404 (or an unknown name\'s 400) and none of A\'s data', async (_id, attempt) => {
    const res = await attempt!(platform, world);
    const text = await res.text();
    expect([400, 403, 404], text).toContain(res.status);
    expect(JSON.parse(text).trace_id).toMatch(/^trc_/);
    for (const secret of world.secrets) expect(text).not.toContain(secret);
    if (res.status === 400) {
      const missing = `missing-${randomUUID()}`;
      const control = await attempt!(platform, { ...world, a: { ...world.a, publisherName: missing } });
      const withoutTrace = (body: string, name: string) => ({ ...JSON.parse(body.replaceAll(name, '<name>')), trace_id: undefined });
      expect(control.status).toBe(400);
      expect(withoutTrace(text, world.a.publisherName)).toEqual(withoutTrace(await control.text(), missing));
    }
  });

  it('leaves A\'s resources unchanged', async () => {
    const { prisma } = platform.services.database;
    expect((await prisma.agent.findUniqueOrThrow({ where: { id: world.a.agentId } })).name).toBe('A secret agent');
    expect((await prisma.apiKey.findUniqueOrThrow({ where: { id: world.a.keyId } })).status).toBe('active');
    const item = await prisma.item.findUniqueOrThrow({ where: { id: world.a.itemId } });
    expect({ title: item.title, evergreen: item.evergreen, deletedAt: item.deletedAt }).toEqual({ title: 'A-SECRET-TITLE', evergreen: false, deletedAt: null });
    // Nothing B uploaded landed in A's publisher.
    expect(await prisma.item.count({ where: { publisherId: world.a.publisherId } })).toBe(1);
    expect((await prisma.message.findUniqueOrThrow({ where: { id: world.a.messageId } })).deletedAt).toBeNull();
  });
}

describe('cross-organization matrix on PGlite', () => matrix(() => startTestPlatform()));

describePostgres('cross-organization matrix on PostgreSQL', () => {
  const database = useTestDatabase('crossorg');
  matrix(() => startTestPlatform({ databaseUrl: database.url }));
});
