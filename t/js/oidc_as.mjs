// A real authorization server for t/token_exchange.t: oidc-provider
// (npm) with the client credentials grant (how the test's callers get
// their tokens, audience the gateway) and the token-exchange grant of
// RFC 8693 registered with registerGrantType.  The exchange validates the
// subject token (a JWT this provider signed, for the gateway's audience,
// unexpired) and issues a JWT access token for the requested audience
// (audience= or resource=, RFC 8707) with oidc-provider's own token
// machinery (resource indicators, JWT format).
//
// Usage: node oidc_as.mjs (env: GW_RESOURCE, UP_RESOURCE and UP_TTL,
// SHORT_RESOURCE and SHORT_TTL: the audiences and their tokens' lives;
// PKJWT_JWKS: the JWK set of the private_key_jwt client gateway-pkjwt)
// Prints {"port":N} once listening.  GET /count: the exchanges asked for
// (every request of the grant, answered or refused) and issued.  POST
// /refuse?on=1|0: refuse every exchange with invalid_grant; POST
// /delay?ms=N: answer each exchange N ms late (requests that overlap).

import * as crypto from 'node:crypto';
import * as net from 'node:net';
import Provider, { errors } from 'oidc-provider';

const gwResource = process.env.GW_RESOURCE || 'https://gateway.test/mcp';
const upResource = process.env.UP_RESOURCE || 'https://upstream.test/mcp';
const shortResource = process.env.SHORT_RESOURCE || 'https://upstream.test/short';
const upTtl = Number(process.env.UP_TTL || 300);
const shortTtl = Number(process.env.SHORT_TTL || 4);
const TE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const AT = 'urn:ietf:params:oauth:token-type:access_token';

const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'as1', use: 'sig', alg: 'RS256' };
const publicKey = crypto.createPublicKey(privateKey);

const counts = { asked: 0, issued: 0, refused: 0, pkjwt: 0 };
let refuseAll = false;
let delayMs = 0;

const servers = {
  [gwResource]: { scope: 'mcp:tools', audience: gwResource, accessTokenTTL: 3600,
                  accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } },
  [upResource]: { scope: 'mcp:tools', audience: upResource, accessTokenTTL: upTtl,
                  accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } },
  [shortResource]: { scope: 'mcp:tools', audience: shortResource, accessTokenTTL: shortTtl,
                     accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } },
};

function client(id, methods, grants) {
  return { client_id: id, client_secret: `${id}-secret`, grant_types: grants,
           redirect_uris: [], response_types: [], token_endpoint_auth_method: methods,
           scope: 'mcp:tools' };
}

// a free port first: the issuer names it
const port = await new Promise((resolve) => {
  const probe = net.createServer().listen(0, '127.0.0.1', () => {
    const { port: p } = probe.address();
    probe.close(() => resolve(p));
  });
});
const issuer = `http://127.0.0.1:${port}`;

// the subject token: this provider's own RS256 JWT for the gateway
function verifySubject(token) {
  const parts = String(token || '').split('.');
  if (parts.length !== 3) return null;
  const ok = crypto.verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), publicKey,
                          Buffer.from(parts[2], 'base64url'));
  if (!ok) return null;
  const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString());
  if (claims.iss !== issuer || claims.exp <= Date.now() / 1000) return null;
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  return aud.includes(gwResource) ? claims : null;
}

// PKJWT_JWKS: the public keys of a private_key_jwt client, gateway-pkjwt
const pkjwt = process.env.PKJWT_JWKS
  ? [{ ...client('gateway-pkjwt', 'private_key_jwt', [TE]), client_secret: undefined,
       jwks: JSON.parse(process.env.PKJWT_JWKS) }]
  : [];

const provider = new Provider(issuer, {
  clients: [
    ...pkjwt,
    client('gateway', 'client_secret_basic', [TE]),
    client('gateway-post', 'client_secret_post', [TE]),
    client('caller1', 'client_secret_basic', ['client_credentials']),
    client('caller2', 'client_secret_basic', ['client_credentials']),
  ],
  jwks: { keys: [jwk] },
  scopes: ['mcp:tools'],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (servers[indicator]) return servers[indicator];
        throw new errors.InvalidTarget();
      },
    },
  },
  extraTokenClaims: (ctx, token) => (ctx.exchangedFor ? { act: { sub: ctx.exchangedFor } } : undefined),
});

const { InvalidGrant, InvalidTarget, InvalidRequest } = errors;

async function exchange(ctx) {
  counts.asked++;
  const { params, client: cl } = ctx.oidc;
  if (delayMs) await new Promise((resolve) => { setTimeout(resolve, delayMs); });

  if (refuseAll) { counts.refused++; throw new InvalidGrant('refused by the test'); }
  if (params.subject_token_type !== AT) throw new InvalidRequest('unsupported subject_token_type');

  const subject = verifySubject(params.subject_token);
  if (!subject) { counts.refused++; throw new InvalidGrant('invalid subject_token'); }

  const target = params.resource || params.audience;
  const info = servers[target];
  if (!info || target === gwResource) throw new InvalidTarget();

  const token = new provider.ClientCredentials({ client: cl, scope: 'mcp:tools' });
  token.resourceServer = new provider.ResourceServer(target, info);
  ctx.exchangedFor = subject.sub;
  const value = await token.save();
  counts.issued++;
  if (cl.clientId === 'gateway-pkjwt') counts.pkjwt++;

  ctx.body = {
    access_token: value,
    issued_token_type: AT,
    token_type: 'Bearer',
    expires_in: token.expiration,
    scope: token.scope,
  };
}

provider.registerGrantType(TE, exchange,
  ['subject_token', 'subject_token_type', 'audience', 'resource', 'requested_token_type', 'scope'],
  ['audience', 'resource']);

// why a request of the token endpoint failed, in the AS's log
provider.on('grant.error', (ctx, err) => {
  console.error(`grant.error: ${err.error || err.name}: ${err.error_description || err.message}`
                + (err.error_detail ? ` (${err.error_detail})` : ''));
});

provider.use(async (ctx, next) => {
  if (ctx.path === '/count') {
    ctx.body = counts;
    return;
  }
  if (ctx.path === '/delay') {
    delayMs = Number(ctx.query.ms || 0);
    ctx.body = { delay: delayMs };
    return;
  }
  if (ctx.path === '/refuse') {
    refuseAll = ctx.query.on === '1';
    ctx.body = { refuse: refuseAll };
    return;
  }
  await next();
});

provider.listen(port, '127.0.0.1', () => console.log(JSON.stringify({ port })));
