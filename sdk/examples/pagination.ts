import { Platform } from '@inference-platform/sdk';

const platform = new Platform();

// `for await` walks every agent of every page through `meta.nextCursor`.
for await (const agent of platform.management.agents.list({ limit: 50 })) {
  console.log(agent.id, agent.name);
}

// Or page by page; awaiting the call gives the first page only.
for await (const page of platform.management.keys.list().pages()) {
  console.log(page.data.length, page.meta.hasMore);
}
const firstPage = await platform.management.keys.list({ limit: 10 });
console.log(firstPage.meta.nextCursor);
