// `x-replaced-by` and `x-alias-of` must name an existing, different operationId.
import { createRulesetFunction } from '@stoplight/spectral-core';

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export default createRulesetFunction(
  { input: { type: 'object' }, options: null },
  function operationRefsExist(operation, _opts, { path, document }) {
    const ids = new Set();
    for (const item of Object.values(document.data?.paths ?? {})) {
      for (const m of METHODS) if (item?.[m]?.operationId) ids.add(item[m].operationId);
    }
    const results = [];
    for (const key of ['x-replaced-by', 'x-alias-of']) {
      const target = operation[key];
      if (target === undefined) continue;
      if (typeof target !== 'string' || !ids.has(target) || target === operation.operationId) {
        results.push({ message: `${key} must name another existing operationId (got ${JSON.stringify(target)}).`, path: [...path, key] });
      }
    }
    return results;
  },
);
