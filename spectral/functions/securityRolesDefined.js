// Replacement of `oas3-operation-security-defined`: the scheme must exist;
// oauth2/openIdConnect scopes must be declared in the scheme's flows, and the
// role names OAS 3.1 allows on other schemes (http bearer here) must be keys
// of the root `x-scopes` map.
import { createRulesetFunction } from '@stoplight/spectral-core';

export default createRulesetFunction(
  { input: { type: 'object' }, options: null },
  function securityRolesDefined(requirement, _opts, { path, document }) {
    const doc = document.data ?? {};
    const schemes = doc.components?.securitySchemes ?? {};
    const roles = doc['x-scopes'] ?? {};
    const results = [];
    for (const [name, scopes] of Object.entries(requirement)) {
      const scheme = schemes[name];
      if (!scheme) {
        results.push({ message: `Security scheme "${name}" is not defined in components.securitySchemes.`, path: [...path, name] });
        continue;
      }
      (Array.isArray(scopes) ? scopes : []).forEach((scope, i) => {
        let ok;
        if (scheme.type === 'oauth2') {
          ok = Object.values(scheme.flows ?? {}).some((f) => f?.scopes && scope in f.scopes);
        } else if (scheme.type === 'openIdConnect') {
          ok = true;
        } else {
          ok = scope in roles;
        }
        if (!ok) results.push({ message: `"${scope}" is not a declared scope (x-scopes).`, path: [...path, name, i] });
      });
    }
    return results;
  },
);
