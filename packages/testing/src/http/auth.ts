/**
 * Authentication and authorization as a real server with a token file and RBAC answers a client
 * that is not the admin: a wrong bearer token is 401; no token is `system:anonymous`, who may read
 * the health and version endpoints and nothing else (403 worded from the request's attributes, as
 * the RBAC authorizer words it, before routing decides whether the path exists).
 */
import type { IncomingMessage } from 'node:http';
import { failure, unauthorized, type KubeStatus } from '../status.js';
import { parseBool } from './io.js';

/** Paths the `system:public-info-viewer` role opens to anonymous users. */
const PUBLIC_PATHS = new Set(['/healthz', '/livez', '/readyz', '/version', '/version/']);

/** `RequestInfo`: what the authorizer sees of a request, parsed from the path alone. */
interface RequestAttributes {
  verb: string;
  resource?: {
    group: string;
    namespace: string | undefined;
    plural: string;
    subresource: string | undefined;
    name: string | undefined;
  };
  path: string;
}

function attributesOf(method: string, segments: string[], q: URLSearchParams): RequestAttributes {
  const path = `/${segments.join('/')}`;
  const httpVerb = method.toLowerCase();
  let rest: string[];
  let group: string;
  if (segments[0] === 'api' && segments.length >= 3) {
    group = '';
    rest = segments.slice(2);
  } else if (segments[0] === 'apis' && segments.length >= 4) {
    group = segments[1]!;
    rest = segments.slice(3);
  } else return { verb: httpVerb, path };
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  } else if (rest[0] === 'namespaces' && rest.length === 2) {
    namespace = rest[1];
  }
  const plural = rest[0]!;
  const name = rest[1];
  const subresource = rest[2];
  let verb: string;
  if (method === 'GET' || method === 'HEAD')
    verb = parseBool(q.get('watch')) === true ? 'watch' : name === undefined ? 'list' : 'get';
  else if (method === 'POST') verb = 'create';
  else if (method === 'PUT') verb = 'update';
  else if (method === 'PATCH') verb = 'patch';
  else if (method === 'DELETE') verb = name === undefined ? 'deletecollection' : 'delete';
  else verb = httpVerb;
  return { verb, path, resource: { group, namespace, plural, subresource, name } };
}

/** RBAC's denial for `system:anonymous`. */
function forbiddenAnonymous(a: RequestAttributes): KubeStatus {
  const user = 'User "system:anonymous"';
  if (a.resource === undefined) return failure(403, 'Forbidden', `forbidden: ${user} cannot ${a.verb} path "${a.path}"`, {});
  const r = a.resource;
  const qualified = r.group === '' ? r.plural : `${r.plural}.${r.group}`;
  const resource = r.subresource === undefined ? r.plural : `${r.plural}/${r.subresource}`;
  const subject = r.name === undefined ? qualified : `${qualified} "${r.name}"`;
  const scope = r.namespace === undefined ? '' : ` in the namespace "${r.namespace}"`;
  const where = r.namespace === undefined && r.plural !== 'namespaces' ? ' at the cluster scope' : scope;
  const details: Record<string, string> = {};
  if (r.name !== undefined) details['name'] = r.name;
  if (r.group !== '') details['group'] = r.group;
  details['kind'] = r.plural;
  return failure(
    403,
    'Forbidden',
    `${subject} is forbidden: ${user} cannot ${a.verb} resource "${resource}" in API group "${r.group}"${where}`,
    details,
  );
}

/** The refusal for this request under `token`, or undefined when it may proceed. */
export function authorize(
  token: string | undefined,
  req: IncomingMessage,
  segments: string[],
  q: URLSearchParams,
): KubeStatus | undefined {
  if (token === undefined) return undefined;
  const header = req.headers.authorization;
  const bearer = header !== undefined && /^bearer /i.test(header) ? header.slice(7).trim() : undefined;
  if (bearer !== undefined) return bearer === token ? undefined : unauthorized();
  const path = `/${segments.join('/')}`;
  if ((req.method === 'GET' || req.method === 'HEAD') && PUBLIC_PATHS.has(path)) return undefined;
  return forbiddenAnonymous(attributesOf(req.method ?? 'GET', segments, q));
}
