// A real OpenID provider for the single sign-on tests: the certified `oidc-provider`
// package, with a one-field login page, accounts the test sets, and a control API (loopback
// only, the test's): set a person's groups, rotate the signing key, send a back-channel
// logout (or hand its token to the test), and alter the next ID token on the wire (audience, expiry, nonce, signature) so
// that the relying party's checks meet a real token that fails exactly one of them.
//
//   node oidc_provider.mjs <port>      prints "ready <issuer>" once it listens.
import { createServer } from 'node:http';
import { generateKeyPair, exportJWK, SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const issuer = `http://127.0.0.1:${port}`;
const accounts = new Map(); // sub -> { email, email_verified, name, groups }
const sids = new Map(); // sub -> the sid of its last ID token
let keys = [];
let clients = [];
let provider;
let tamper = null; // the next token response's alteration
let conform = false; // true: scope-requested claims (groups) only at userinfo, as by default

async function newKey() {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid: `k${keys.length + 1}-${Date.now()}`, alg: 'RS256', use: 'sig' };
}

function build() {
  provider = new Provider(issuer, {
    clients,
    jwks: { keys },
    cookies: { keys: ['test-cookie-key'] },
    conformIdTokenClaims: conform,
    scopes: ['openid', 'offline_access', 'email', 'profile', 'groups'],
    claims: {
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username'],
      groups: ['groups'],
    },
    features: {
      devInteractions: { enabled: false },
      backchannelLogout: { enabled: true },
    },
    // The relying party under test listens on loopback, which the provider's own SSRF
    // guard refuses: its back-channel logout is sent without that guard.
    fetch: (url, options) => {
      const { dispatcher, ...rest } = options;
      return fetch(url, rest);
    },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(ctx, sub) {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return {
        accountId: sub,
        async claims() {
          return { sub, preferred_username: sub, ...account };
        },
      };
    },
  });
  provider.proxy = false;
}

async function body(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return Buffer.concat(chunks).toString();
}

function send(res, status, payload, type = 'application/json') {
  res.writeHead(status, { 'content-type': type });
  res.end(typeof payload === 'string' ? payload : JSON.stringify(payload));
}

async function resign(idToken, change) {
  const claims = decodeJwt(idToken);
  const { kid } = decodeProtectedHeader(idToken);
  const jwk = keys.find((key) => key.kid === kid);
  const { importJWK } = await import('jose');
  const key = await importJWK(jwk, 'RS256');
  return new SignJWT({ ...claims, ...change }).setProtectedHeader({ alg: 'RS256', kid }).sign(key);
}

async function altered(idToken) {
  const mode = tamper;
  tamper = null;
  const now = Math.floor(Date.now() / 1000);
  if (mode === 'audience') return resign(idToken, { aud: 'someone-else' });
  if (mode === 'expired') return resign(idToken, { iat: now - 7200, exp: now - 3600 });
  if (mode === 'nonce') return resign(idToken, { nonce: 'not-the-nonce-sent' });
  if (mode === 'signature') {
    const [header, payload, signature] = idToken.split('.');
    const flipped = signature[0] === 'A' ? `B${signature.slice(1)}` : `A${signature.slice(1)}`;
    return `${header}.${payload}.${flipped}`;
  }
  return idToken;
}

// The token endpoint's answer, read (each ID token's sid, for logout) and altered when asked.
function watchTokens(res) {
  const end = res.end.bind(res);
  res.end = (chunk, ...rest) => {
    if (!chunk || res.statusCode !== 200) return end(chunk, ...rest);
    const answer = JSON.parse(chunk.toString());
    if (!answer.id_token) return end(chunk, ...rest);
    const claims = decodeJwt(answer.id_token);
    if (claims.sid) sids.set(claims.sub, claims.sid);
    altered(answer.id_token).then((idToken) => {
      const text = JSON.stringify({ ...answer, id_token: idToken });
      res.setHeader('content-length', Buffer.byteLength(text));
      end(text);
    });
    return res;
  };
}

async function control(req, res, path) {
  const data = req.method === 'POST' ? JSON.parse((await body(req)) || '{}') : {};
  if (path === '/control/client') {
    clients = [data];
    build();
  } else if (path === '/control/account') {
    const { sub, ...claims } = data;
    accounts.set(sub, claims);
  } else if (path === '/control/account/delete') {
    accounts.delete(data.sub);
  } else if (path === '/control/rotate') {
    keys = [await newKey(), ...keys];
    build();
  } else if (path === '/control/conform') {
    conform = Boolean(data.on);
    build();
  } else if (path === '/control/tamper') {
    tamper = data.mode;
  } else if (path === '/control/logout-token') {
    // The token a back-channel logout would carry, handed to the test instead of sent.
    const client = await provider.Client.find(clients[0].client_id);
    const token = new provider.IdToken({ sub: data.sub }, { client, ctx: undefined });
    token.mask = { sub: null };
    token.set('events', { 'http://schemas.openid.net/event/backchannel-logout': {} });
    token.set('jti', `jti-${Date.now()}-${Math.random()}`);
    if (sids.has(data.sub)) token.set('sid', sids.get(data.sub));
    return send(res, 200, { logout_token: await token.issue({ use: 'logout' }) });
  } else if (path === '/control/logout') {
    const client = await provider.Client.find(clients[0].client_id);
    try {
      await client.backchannelLogout(data.sub, sids.get(data.sub));
    } catch (error) {
      return send(res, 502, { error: `${error.message}: ${error.cause}` });
    }
  } else {
    return send(res, 404, { error: 'unknown control' });
  }
  return send(res, 200, { ok: true, kid: keys[0].kid });
}

async function interaction(req, res, uid) {
  const details = await provider.interactionDetails(req, res);
  if (details.prompt.name === 'login') {
    if (req.method === 'POST') {
      const login = new URLSearchParams(await body(req)).get('login');
      if (!accounts.has(login)) {
        return send(res, 200, page(uid, `No such account: ${login}`), 'text/html');
      }
      return provider.interactionFinished(req, res, { login: { accountId: login } });
    }
    return send(res, 200, page(uid, ''), 'text/html');
  }
  const { accountId } = details.session;
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope);
  const grantId = await grant.save();
  return provider.interactionFinished(req, res, { consent: { grantId } });
}

function page(uid, error) {
  return `<!doctype html><title>Test IdP sign-in</title><h1>Test identity provider</h1>
<p>${error}</p><form method="post" action="/interaction/${uid}">
<label>Account <input name="login" id="idp-login" autofocus></label>
<button type="submit" id="idp-submit">Sign in</button></form>`;
}

keys = [await newKey()];
build();
createServer(async (req, res) => {
  const { pathname } = new URL(req.url, issuer);
  try {
    if (pathname.startsWith('/control/')) return await control(req, res, pathname);
    const match = pathname.match(/^\/interaction\/([^/]+)$/);
    if (match) return await interaction(req, res, match[1]);
    if (pathname === '/token' && req.method === 'POST') watchTokens(res);
    return provider.callback()(req, res);
  } catch (error) {
    return send(res, 500, { error: String(error.message) });
  }
}).listen(port, '127.0.0.1', () => console.log(`ready ${issuer}`));
