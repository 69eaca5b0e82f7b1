/**
 * HTML form bodies (`application/x-www-form-urlencoded`), which the adapters parse into an
 * object beside the JSON bodies of the API. A field is read only when it was sent once as
 * plain text: a repeated or nested field is treated as absent, on both servers alike.
 */
import type { ApiRequest } from '../http/handler.ts';

/** A route that reads forms rather than JSON (routes.ts Route.bodies). */
export const FORM_BODY = ['form'] as const;

export function isForm(request: ApiRequest): boolean {
  return /^application\/x-www-form-urlencoded\s*(?:;|$)/i.test(request.headers['content-type'] ?? '');
}

/** The form's plain-text fields; empty when the body is not a form. */
export function formFields(request: ApiRequest): Record<string, string> {
  const body = request.body;
  if (!isForm(request) || typeof body !== 'object' || body === null) return {};
  const fields: Record<string, string> = {};
  for (const [name, value] of Object.entries(body)) if (typeof value === 'string') fields[name] = value;
  return fields;
}
