// Management paths (/api/v1/...) carry the path-level {mgmt_base_url} server;
// no other path item has path-level servers.
import { createRulesetFunction } from '@stoplight/spectral-core';

export default createRulesetFunction(
  { input: { type: 'object' }, options: null },
  function managementServers(paths, _opts, { path }) {
    const results = [];
    for (const [p, item] of Object.entries(paths)) {
      const isMgmt = p.startsWith('/api/v1/');
      const servers = item?.servers;
      if (isMgmt) {
        if (!Array.isArray(servers) || servers.length !== 1 || servers[0]?.url !== '{mgmt_base_url}') {
          results.push({ message: `${p} must declare servers: [{url: "{mgmt_base_url}"}].`, path: [...path, p] });
        }
      } else if (servers !== undefined) {
        results.push({ message: `${p} must not declare path-level servers.`, path: [...path, p, 'servers'] });
      }
    }
    return results;
  },
);
