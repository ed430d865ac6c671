/**
 * An error code as a metric label: a provider's documented numeric codes (its channel says which) and notice-service's own codes by name, a gateway's
 * HTTP status by class, anything else `other` (a provider inventing codes must not grow the series without bound;
 * the ledger keeps the raw code).
 */
export function errorCodeLabel(code: string, documented: (code: number) => boolean = () => false): string {
  if (code === '') return '';
  if (/^-?\d+$/.test(code)) return documented(Number(code)) ? code : 'other';
  if (/^HTTP_\d{3}$/.test(code)) return `HTTP_${code[5]}xx`;
  return /^[A-Z][A-Z0-9_]{1,39}$/.test(code) ? code : 'other';
}
