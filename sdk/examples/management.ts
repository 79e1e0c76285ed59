import { Platform } from '@inference-platform/sdk';

const admin = new Platform({ apiKey: process.env.PLATFORM_ADMIN_KEY });

const created = await admin.createKey({ body: { scopes: ['inference', 'data:read'], label: 'web app' } });
console.log('store this once:', created.data.key);

const agent = await admin.createAgent({ body: { name: 'Sermon prep', tags: ['preaching'] } });
await admin.updateAgent({ path: { agent_id: agent.data.id }, body: { status: 'inactive' } });
await admin.revokeKey({ path: { key_id: created.data.id } });
