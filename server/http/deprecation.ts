import { routesById, type RouteDefinition } from '../../generated/contract/routes.js';

/** RFC 9745 Deprecation, RFC 8594 Sunset and a successor link for a deprecated operation. */
export function deprecationHeaders(route: RouteDefinition): [string, string][] {
  if (!route.deprecated) return [];
  const headers: [string, string][] = [
    ['Deprecation', route.deprecatedAt ? `@${Math.floor(Date.parse(route.deprecatedAt) / 1000)}` : 'true'],
  ];
  if (route.sunset) headers.push(['Sunset', new Date(route.sunset).toUTCString()]);
  const successor = route.replacedBy ? routesById[route.replacedBy] : undefined;
  if (successor) headers.push(['Link', `<${successor.path}>; rel="successor-version"`]);
  return headers;
}
