import { Platform } from '@inference-platform/sdk';

const platform = new Platform();

// Ingestion: multipart upload, duplicates are reported (not an error).
const upload = await platform.files.upload({
  publisher_id: '6f1c2b8e-3d4a-4f5b-9c6d-7e8f9a0b1c2d',
  files: [new Blob(['# Sabbath rest\n...'], { type: 'text/markdown' })],
});
console.log(upload.ingesting, upload.duplicates);

// Search: zero hits is an empty list, not an error.
const hits = await platform.search.query({ query: 'sabbath rest', collection: 'articles', tenant: 'Example Publishing', limit: 5 });
for (const hit of hits.data) console.log(hit.metadata.certainty, hit.properties.item_title);

// Items: read and patch.
const item = await platform.items.get('6f1c2b8e-3d4a-4f5b-9c6d-7e8f9a0b1c2d');
await platform.items.update({ publisher_id: '6f1c2b8e-3d4a-4f5b-9c6d-7e8f9a0b1c2d', item_id: item.item_id, visible_in_chat: false });
