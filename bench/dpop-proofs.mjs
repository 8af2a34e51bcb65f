// scripts/bench's DPoP case (RFC 9449): keys, tokens and proofs made
// with jose, an implementation other than the module's.
//
//   node dpop-proofs.mjs setup DIR AUD   an issuer key (RS256) and its
//       JWKS (DIR/jwks.json, for mcp_auth_jwt_key_file), a client key
//       (ES256, DIR/client.jwk) and two access tokens of the issuer for
//       AUD, an hour long: DIR/bearer (no cnf) and DIR/dpop (cnf.jkt the
//       client key's RFC 7638 thumbprint); the same token type, claims
//       and signature but for cnf
//   node dpop-proofs.mjs proofs DIR N HTU OUT   N proofs by the client
//       key for DIR/dpop, POST at HTU, each with a jti of its own, one a
//       line in the file OUT: every DPoP request needs a fresh one (the
//       module refuses a jti it has seen), and wrk cannot sign
//
// The proofs are signed by node's crypto (ECDSA P-256, the JWS r||s
// form) over jose's encoding: jose's SignJWT goes through WebCrypto's
// promises and makes about 6,000 a second here, node's sign() about
// 17,000, and a case needs tens of thousands.  The first proof is checked
// with jose's jwtVerify, so the two agree.

import { readFileSync, writeFileSync } from "node:fs";
import { createHash, createPrivateKey, randomBytes, sign } from "node:crypto";
import { generateKeyPair, exportJWK, importJWK, SignJWT, jwtVerify,
         calculateJwkThumbprint, base64url } from "jose";

const [op, dir] = process.argv.slice(2);
const now = Math.floor(Date.now() / 1000);

if (op === "setup") {
    const aud = process.argv[4];
    const issuer = await generateKeyPair("RS256", { extractable: true });
    const ipub = { ...(await exportJWK(issuer.publicKey)), kid: "bench",
                   alg: "RS256", use: "sig" };
    writeFileSync(`${dir}/jwks.json`, JSON.stringify({ keys: [ipub] }));

    const client = await generateKeyPair("ES256", { extractable: true });
    const cpub = await exportJWK(client.publicKey);
    const cpriv = await exportJWK(client.privateKey);
    writeFileSync(`${dir}/client.jwk`,
                  JSON.stringify({ pub: cpub, priv: cpriv }));

    const claims = { iss: "https://issuer.test", sub: "bench", aud,
                     iat: now, exp: now + 3600, scope: "mcp:tools" };
    const token = (extra) => new SignJWT({ ...claims, ...extra })
        .setProtectedHeader({ alg: "RS256", typ: "at+jwt", kid: "bench" })
        .sign(issuer.privateKey);
    writeFileSync(`${dir}/bearer`, await token({}));
    writeFileSync(`${dir}/dpop`, await token({
        cnf: { jkt: await calculateJwkThumbprint(cpub, "sha256") } }));

} else if (op === "proofs") {
    const n = Number(process.argv[4]);
    const htu = process.argv[5];
    const { pub, priv } = JSON.parse(readFileSync(`${dir}/client.jwk`,
                                                  "utf8"));
    const key = createPrivateKey({ key: priv, format: "jwk" });
    const token = readFileSync(`${dir}/dpop`, "utf8").trim();
    const ath = base64url.encode(createHash("sha256").update(token).digest());
    const head = base64url.encode(JSON.stringify({ typ: "dpop+jwt",
                                                   alg: "ES256", jwk: pub }));
    // a run's prefix and a counter: unique jtis without a UUID each
    const run = randomBytes(9).toString("base64url");
    const out = [];
    for (let i = 0; i < n; i++) {
        const body = base64url.encode(JSON.stringify({
            htm: "POST", htu, iat: now, jti: `${run}-${i}`, ath }));
        const input = `${head}.${body}`;
        const sig = sign("sha256", Buffer.from(input),
                         { key, dsaEncoding: "ieee-p1363" });
        out.push(`${input}.${sig.toString("base64url")}`);
    }
    await jwtVerify(out[0], await importJWK(pub, "ES256"),
                    { typ: "dpop+jwt" });
    writeFileSync(process.argv[6], out.join("\n") + "\n");

} else {
    console.error("usage: dpop-proofs.mjs setup DIR AUD"
                  + " | proofs DIR N HTU OUT");
    process.exit(2);
}
