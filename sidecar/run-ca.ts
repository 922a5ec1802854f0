// The run's certificate authority: made at the sidecar's start when a local MCP server of the run
// is to have its credential injected over HTTPS (delivery.http). The sidecar's egress proxy
// terminates that server's TLS to its authorized hosts with a certificate this authority signs for
// the host (on demand, cached), and the server's runtime is told to trust the authority's
// certificate (its bridge writes it where NODE_EXTRA_CA_CERTS and SSL_CERT_FILE point). The key
// lives in this process's memory only, for a short validity: nothing writes it anywhere, and a
// restarted sidecar makes a new one.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import tls from 'node:tls';
import type Forge from 'node-forge';

/** how long the authority and its certificates are valid: a run's longest life, with room */
export const RUN_CA_VALIDITY_MS = 48 * 3600_000;
/** certificates start this long before now: a server's clock a little behind still accepts them */
const BACKDATE_MS = 5 * 60_000;
/** hosts whose certificate is kept at most (a server naming endless hosts is refused before this, by authorized_uris) */
const MAX_CACHED_HOSTS = 256;

export interface RunCertificateAuthority {
  /** the authority's certificate (PEM): what the server's runtime trusts */
  readonly certPem: string;
  /** when the authority's certificates stop being valid */
  readonly notAfter: Date;
  /** the TLS context to present to the server for `host` (a certificate for it, signed on first use and cached) */
  contextFor(host: string): tls.SecureContext;
}

type ForgeModule = typeof Forge;

function rsaKeys(forge: ForgeModule): { privateKey: Forge.pki.rsa.PrivateKey; publicKey: Forge.pki.rsa.PublicKey; keyPem: string } {
  // node's generator (native), handed to forge for signing: forge's own takes seconds
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  return {
    privateKey: forge.pki.privateKeyFromPem(keyPem),
    publicKey: forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString()),
    keyPem,
  };
}

/** a positive serial number of 16 random bytes, hex */
const serial = () => `01${randomBytes(15).toString('hex')}`;

/** The run's authority (node-forge is loaded on first use: a run without injection does not pay for it). */
export async function createRunCa(opts: { validityMs?: number; now?: () => number } = {}): Promise<RunCertificateAuthority> {
  const forge = ((await import('node-forge')) as unknown as { default?: ForgeModule }).default ?? ((await import('node-forge')) as unknown as ForgeModule);
  const now = opts.now ?? Date.now;
  const notBefore = new Date(now() - BACKDATE_MS);
  const notAfter = new Date(now() + (opts.validityMs ?? RUN_CA_VALIDITY_MS));
  const authority = rsaKeys(forge);
  const subject = [
    { name: 'commonName', value: `agent-platform run CA ${randomBytes(6).toString('hex')}` },
    { name: 'organizationName', value: 'agent-platform sidecar' },
  ];
  const ca = forge.pki.createCertificate();
  ca.publicKey = authority.publicKey;
  ca.serialNumber = serial();
  ca.validity.notBefore = notBefore;
  ca.validity.notAfter = notAfter;
  ca.setSubject(subject);
  ca.setIssuer(subject);
  ca.setExtensions([
    // an authority that signs end certificates only
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.sign(authority.privateKey, forge.md.sha256.create());
  const certPem = forge.pki.certificateToPem(ca);

  // one key for every host's certificate: the server holds none of them either way
  let leafKeys: ReturnType<typeof rsaKeys> | undefined;
  const contexts = new Map<string, tls.SecureContext>();

  const sign = (host: string): tls.SecureContext => {
    leafKeys ??= rsaKeys(forge);
    const cert = forge.pki.createCertificate();
    cert.publicKey = leafKeys.publicKey;
    cert.serialNumber = serial();
    cert.validity.notBefore = notBefore;
    cert.validity.notAfter = notAfter;
    cert.setSubject([{ name: 'commonName', value: host.length <= 64 ? host : host.slice(0, 64) }]);
    cert.setIssuer(ca.subject.attributes);
    cert.setExtensions([
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [isIP(host) ? { type: 7, ip: host } : { type: 2, value: host }] },
      { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
    ]);
    cert.sign(authority.privateKey, forge.md.sha256.create());
    return tls.createSecureContext({ key: leafKeys.keyPem, cert: `${forge.pki.certificateToPem(cert)}${certPem}` });
  };

  return {
    certPem,
    notAfter,
    contextFor(rawHost) {
      const host = rawHost.toLowerCase().replace(/^\[(.*)\]$/, '$1');
      let context = contexts.get(host);
      if (!context) {
        context = sign(host);
        if (contexts.size >= MAX_CACHED_HOSTS) contexts.delete(contexts.keys().next().value!);
        contexts.set(host, context);
      }
      return context;
    },
  };
}
