import { withoutControlChars } from '../platform/text.ts';

/** A query value that names a signature, however a provider spells the key. */
const SIG_PARAM = /\b(user_?sig|sig|signature|secret_?key)=[^&\s"'<>]*/gi;

/**
 * Provider text (Tencent's ErrorInfo) as it may be logged and stored: a provider that echoes the request URL
 * would otherwise put the admin UserSig in logs, the ledger and pages. Removes each given secret (the UserSigs in
 * use, the secret key), any `usersig=`-like value, and control characters; then clips.
 */
export function redactProviderText(text: string, secrets: readonly string[], maxChars = 512): string {
  let out = text.slice(0, maxChars * 8);
  for (const secret of secrets) if (secret.length >= 8) out = out.split(secret).join('[redacted]');
  return withoutControlChars(out.replace(SIG_PARAM, '$1=[redacted]')).slice(0, maxChars);
}
