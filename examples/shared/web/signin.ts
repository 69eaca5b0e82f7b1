/**
 * The public side of the site: `/` (what the service is, its plans and prices, and sign-in with
 * an API key in a plain form that works without JavaScript), and POST /web/login and
 * /web/logout, which take the sign-in form as well as the JSON of the API. Both follow the
 * cookie rule (cookieRule.ts): signing in from another origin would plant a session of the
 * other site's choosing, signing out from one would end the user's. The form also carries a
 * CSRF token bound to the `tg_signin` cookie (csrf.ts).
 */
import type { PlanTable } from 'tollgate';
import { SESSION_COOKIE } from '../auth/credentials.ts';
import { bodyRefusal, cookie, fail, type ApiRequest, type Handler, type HttpReply } from '../http/handler.ts';
import { MESSAGES } from '../http/messages.ts';
import { crossOriginRefusal } from './cookieRule.ts';
import { signinBinding } from './cookies.ts';
import { CSRF_FIELD, csrfToken, csrfValid } from './csrf.ts';
import { errorPage, explain } from './errorPage.ts';
import { format } from './format.ts';
import { formFields, isForm } from './forms.ts';
import { redirect, render } from './render.ts';
import type { Site } from './site.ts';

export interface SigninDeps {
  site: Site;
  plans: PlanTable;
}

/** The JSON API's own sign-in and sign-out (webApi.ts), which the forms reuse. */
export interface SessionHandlers {
  login: Handler;
  logout: Handler;
}

export function signinHandlers(deps: SigninDeps, api: SessionHandlers) {
  const home: Handler = async (request) => signinPage(deps, request);

  const login: Handler = async (request) => {
    const refused = crossOriginRefusal(request, deps.site);
    if (!isForm(request)) return refused ?? api.login(request);
    if (refused) return signinPage(deps, request, refused);
    // A form too large (or not UTF-8) is answered as such, not as a failed sign-in.
    const unreadable = bodyRefusal(request);
    if (unreadable) return signinPage(deps, request, unreadable);
    const fields = formFields(request);
    if (!csrfValid(request, 'signin', fields[CSRF_FIELD])) return signinPage(deps, request, fail(request, 'forbidden', MESSAGES.staleForm));
    const reply = await api.login({ ...request, body: { api_key: (fields.api_key ?? '').trim() } });
    if (reply.status !== 200) return signinPage(deps, request, reply);
    return redirect('/dashboard', { 'Set-Cookie': reply.headers['Set-Cookie'] ?? '' });
  };

  /** Body-less: the cookie rule is all it needs. A browser's form goes back to `/`. */
  const logout: Handler = async (request) => {
    const html = isForm(request) || (request.headers.accept ?? '').includes('text/html');
    const refused = crossOriginRefusal(request, deps.site);
    if (refused) return html ? errorPage(refused, { signedIn: true }) : refused;
    const reply = await api.logout(request);
    if (!html || reply.status !== 200) return reply;
    return redirect('/', { 'Set-Cookie': reply.headers['Set-Cookie'] ?? '' });
  };

  return { home, login, logout };
}

/** `/`, with the sentences of a failed sign-in when there was one (its status and headers kept). */
function signinPage(deps: SigninDeps, request: ApiRequest, failed?: HttpReply): HttpReply {
  const binding = signinBinding(request, deps.site);
  const error = failed === undefined ? null : explain(failed, { signedIn: false, failedSignIns: failed.status === 429 });
  if (error !== null && failed?.status === 401) {
    error.title = 'That key did not work';
    error.sentences = ['That API key was not accepted. Check that you pasted all of it (it starts with tgk_) and try again.'];
  }
  const { 'Content-Type': _json, ...headers } = failed?.headers ?? {};
  return render(
    'home',
    {
      title: 'Sign in',
      nav: null,
      signedIn: false,
      hasSession: cookie(request, SESSION_COOKIE) !== undefined,
      csrfField: CSRF_FIELD,
      csrf: csrfToken('signin', binding.value),
      error,
      plans: planRows(deps.plans),
    },
    failed?.status ?? 200,
    { ...headers, ...(binding.setCookie === undefined ? {} : { 'Set-Cookie': binding.setCookie }) },
  );
}

/** The plan table as the home page lists it (docs/example-service.md#plans). */
function planRows(plans: PlanTable) {
  return Object.entries(plans).map(([name, plan]) => {
    const perMinute = (surface: string) => plan.limits[surface]?.find((w) => w.algorithm !== 'concurrency' && w.windowMs === 60_000)?.limit ?? null;
    const cycle = plan.credits.cycle;
    return {
      name,
      api: perMinute('api'),
      web: perMinute('web'),
      credits: format.number(plan.credits.allowance),
      cycle: 'months' in cycle ? (cycle.months === 1 ? 'month' : `${cycle.months} months`) : `${cycle.days} days`,
      bulkViaApi: plan.holds?.surfaces?.includes('api') ?? false,
      jobs: plan.holds?.cap ?? 0,
    };
  });
}
