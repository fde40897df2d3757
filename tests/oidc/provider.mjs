// An OpenID Connect provider for the tests: node-oidc-provider (from npm, pinned in
// scripts/test) on loopback, issuing JWT access tokens for Pangolin, with signing keys it
// generates at start.
//
//   node provider.mjs PORT
//
// Engines sign in with the client credentials grant: clients `engine` (groups
// `data-engineers`), `analyst` (groups `analysts`), `nobody` (no groups), each with the secret
// `<id>-secret`. People sign in through the provider's development pages (any login and
// password; the login is the subject): `ana` is in `data-engineers`, `ben` in `analysts`,
// anyone else in no group. Their clients: `pangolin-cli`, public, for the device
// authorization grant, and `pangolin-ui` (secret `pangolin-ui-secret`), for the authorization
// code grant with PKCE and a loopback redirect on any port to `/ui/login/oidc/callback`. The
// access tokens of both live 5 seconds, so tests see them refreshed. Tokens carry `aud`
// `pangolin`, `sub`, `preferred_username`, `email` and `groups`.
//
// Test-only routes beside the provider's own:
//   POST /_test/rotate        new signing keys (RS256 and ES256); the old ones stop signing
//                             and leave the JWKS
//   POST /_test/jwks/down     the JWKS answers 503 until /_test/jwks/up
//   GET  /_test/keys          the current signing keys (`kid`, `alg`, `private_pem`,
//                             `public_pem`), so tests can forge tokens the provider would
//                             never issue (expired, for another audience, HMAC-signed)

import http from 'node:http';
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID } from 'node:crypto';
import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const issuer = `http://127.0.0.1:${port}`;

const groups = {
  engine: ['data-engineers'], analyst: ['analysts'], nobody: [], ana: ['data-engineers'], ben: ['analysts'],
};
const engines = ['engine', 'analyst', 'nobody'].map((id) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: 'client_secret_post',
}));
const clients = [
  ...engines,
  {
    client_id: 'pangolin-cli',
    application_type: 'native',
    grant_types: ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token'],
    redirect_uris: [],
    response_types: [],
    token_endpoint_auth_method: 'none',
  },
  {
    client_id: 'pangolin-ui',
    client_secret: 'pangolin-ui-secret',
    application_type: 'native',
    grant_types: ['authorization_code', 'refresh_token'],
    redirect_uris: ['http://127.0.0.1/ui/login/oidc/callback'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post',
  },
];

function signingKeys() {
  const kid = randomUUID().slice(0, 8);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
  return [
    { ...rsa, kid: `rsa-${kid}`, alg: 'RS256', use: 'sig' },
    { ...ec, kid: `ec-${kid}`, alg: 'ES256', use: 'sig' },
  ];
}

function provider(keys) {
  const p = new Provider(issuer, {
    clients,
    jwks: { keys },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      deviceFlow: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'urn:pangolin',
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator, client) => ({
          scope: 'catalog',
          audience: 'pangolin',
          accessTokenTTL: ['pangolin-cli', 'pangolin-ui'].includes(client.clientId) ? 5 : 600,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    scopes: ['openid', 'offline_access', 'catalog'],
    findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id, preferred_username: id }) }),
    extraTokenClaims: (ctx, token) => {
      const id = token.accountId ?? token.clientId;
      return { preferred_username: id, email: `${id}@example.test`, groups: groups[id] ?? [] };
    },
  });
  // Loopback over plain HTTP is what the tests run on.
  p.proxy = true;
  return p;
}

let keys = signingKeys();
let current = provider(keys);
let jwksDown = false;

const server = http.createServer((req, res) => {
  const done = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  if (req.method === 'POST' && req.url === '/_test/rotate') {
    keys = signingKeys();
    current = provider(keys);
    return done(200, { kids: keys.map((k) => k.kid) });
  }
  if (req.method === 'POST' && (req.url === '/_test/jwks/down' || req.url === '/_test/jwks/up')) {
    jwksDown = req.url.endsWith('down');
    return done(200, { down: jwksDown });
  }
  if (req.method === 'GET' && req.url === '/_test/keys') {
    const pems = keys.map((jwk) => {
      const key = createPrivateKey({ key: jwk, format: 'jwk' });
      return {
        kid: jwk.kid,
        alg: jwk.alg,
        private_pem: key.export({ type: 'pkcs8', format: 'pem' }),
        public_pem: createPublicKey(key).export({ type: 'spki', format: 'pem' }),
      };
    });
    return done(200, { keys: pems });
  }
  if (jwksDown && req.url.startsWith('/jwks')) {
    return done(503, { error: 'temporarily_unavailable' });
  }
  return current.callback()(req, res);
});

server.listen(port, '127.0.0.1', () => console.log(`oidc provider at ${issuer}`));
process.on('SIGTERM', () => process.exit(0));
