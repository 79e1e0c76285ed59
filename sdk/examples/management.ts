import { Platform } from '@inference-platform/sdk';

const admin = new Platform({ apiKey: process.env.PLATFORM_ADMIN_KEY });

const created = await admin.management.keys.create({ scopes: ['inference', 'data:read'], label: 'web app' });
console.log('store this once:', created.data.key);

const agent = await admin.management.agents.create({ name: 'Sermon prep', tags: ['preaching'] });
await admin.management.agents.update(agent.data.id, { status: 'inactive' });
await admin.management.keys.revoke(created.data.id);
