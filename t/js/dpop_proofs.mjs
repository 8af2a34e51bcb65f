// DPoP (RFC 9449) proofs and DPoP-bound access tokens made with jose,
// an implementation of its own, for t/auth_dpop.t: the thumbprint the
// module computes (RFC 7638) is checked against jose's.
//
// usage: node dpop_proofs.mjs SPEC.json
// SPEC: { issuer: { pem, kid }, jobs: [ ... ] }, done in order:
//   { op: "key", name, alg }              a key pair; out: its public jwk
//                                         and thumbprint (name.jwk,
//                                         name.jkt)
//   { op: "token", name, claims, key }    an RS256 access token of the
//                                         issuer with cnf.jkt of key (if
//                                         given)
//   { op: "proof", name, key, token, htm, htu, iat, jti, alg, typ,
//     private_jwk, ath, hmac, nonce, omit }
//                                         a proof by key for token; alg
//                                         "none" unsigned, hmac: HS256
//                                         with that secret
// prints one JSON object: name -> value

import { readFileSync } from "node:fs";
import { createHash, randomUUID } from "node:crypto";
import { generateKeyPair, exportJWK, importPKCS8, SignJWT,
         calculateJwkThumbprint, base64url } from "jose";

const spec = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = {};
const keys = {};
const now = Math.floor(Date.now() / 1000);

const issuer = await importPKCS8(spec.issuer.pem, "RS256");

for (const job of spec.jobs) {
    if (job.op === "key") {
        const alg = job.alg || "ES256";
        const pair = await generateKeyPair(alg, { extractable: true });
        const jwk = await exportJWK(pair.publicKey);
        const priv = await exportJWK(pair.privateKey);
        keys[job.name] = { alg, pair, jwk, priv };
        out[job.name + ".jwk"] = jwk;
        out[job.name + ".jkt"] = await calculateJwkThumbprint(jwk, "sha256");

    } else if (job.op === "token") {
        const claims = { ...job.claims };
        if (job.key) {
            claims.cnf = { jkt: out[job.key + ".jkt"] };
        }
        out[job.name] = await new SignJWT(claims)
            .setProtectedHeader({ alg: "RS256", typ: "at+jwt",
                                  kid: spec.issuer.kid })
            .sign(issuer);

    } else if (job.op === "proof") {
        const k = keys[job.key];
        const alg = job.alg || k.alg;
        const header = { typ: job.typ || "dpop+jwt", alg,
                         jwk: job.private_jwk ? k.priv : k.jwk };
        const token = out[job.token] ?? job.token_text ?? "";
        const claims = {
            htm: job.htm ?? "POST",
            htu: job.htu,
            iat: now + (job.iat ?? 0),
            jti: job.jti ?? randomUUID(),
            ath: job.ath
                 ?? base64url.encode(createHash("sha256").update(token)
                                     .digest()),
        };
        if (job.nonce !== undefined) {
            claims.nonce = job.nonce;
        }
        for (const m of job.omit || []) {
            delete claims[m];
        }

        if (alg === "none") {
            const enc = (o) => base64url.encode(JSON.stringify(o));
            out[job.name] = enc(header) + "." + enc(claims) + ".";
        } else {
            const key = job.hmac ? new TextEncoder().encode(job.hmac)
                                 : k.pair.privateKey;
            out[job.name] = await new SignJWT(claims)
                .setProtectedHeader(header).sign(key);
        }
    }
}

console.log(JSON.stringify(out));
