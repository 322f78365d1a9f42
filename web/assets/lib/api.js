// The one way pages talk to the FrontRow API: JSON in and out, the customer token attached,
// and every `application/problem+json` answer turned into an ApiError carrying a human sentence.

import { token, signOut } from './session.js';

/** What each problem type means to a fan. The key is the type's last segment. */
const SENTENCES = {
  // Seats and orders
  'seats-unavailable': 'Sorry — someone else just took one of those seats. Please pick others.',
  'no-adjacent-seats': 'There are not that many seats together in this section any more. Try fewer seats or another section.',
  'orphan-seat': 'That choice would leave a single seat on its own in the row, which nobody could sit in with anyone. Move your seats next to taken ones or to the end of the row.',
  'bad-seat-count': 'That is more seats than one order may hold.',
  'duplicate-seat': 'The same seat was picked twice.',
  'unknown-seats': 'One of those seats does not exist on this map any more. Please reload the page.',
  'unknown-section': 'That section does not exist on this map.',
  'bad-selection': 'Pick some seats, or ask for the best available ones.',
  'customer-limit': 'You already hold or own as many seats for this event as one fan may have.',
  'amount-too-large': 'That order is too large to pay for in one go. Pick fewer seats.',
  'not-on-sale': 'Tickets are not on sale yet. Come back when the onsale starts.',
  'sales-closed': 'Sales for this event have closed.',
  'sold-out': 'This event is sold out.',
  'not-sold-out': 'The waiting list opens only once the event is sold out.',
  'already-booked': 'These seats are already paid for — there is nothing more to do.',
  'not-booked': 'Only a paid booking can be cancelled.',
  'reservation-not-found': 'We could not find that booking.',
  'event-not-found': 'We could not find that event.',
  'not-found': 'We could not find that.',
  // Waiting room and admission
  'admission-required': 'This event has a waiting room: join the queue and wait for your turn to choose seats.',
  'admission-invalid': 'Your place in the waiting room could not be confirmed. Please rejoin the queue.',
  'admission-wrong-event': 'That admission is for another event.',
  'admission-expired': 'Your turn to choose seats has ended. Please rejoin the queue.',
  'admission-spent': 'Your admission has already been used for a booking.',
  'admission-in-use': 'You already hold seats with this admission. Pay for or release them first.',
  'queue-full': 'The waiting room is full right now. Please try again in a little while.',
  'no-queue': 'This event has no waiting room.',
  'not-in-queue': 'You are not in this event\'s queue.',
  'onsale-started': 'The onsale has already started.',
  // Signing in and requests
  'unauthorized': 'Please sign in first (your session may have ended).',
  'forbidden': 'You are not allowed to do that.',
  'idempotency-key-reused': 'That request was already used for something else. Please try again.',
  'idempotency-key-required': 'The page sent an incomplete request. Please reload and try again.',
  'bad-idempotency-key': 'The page sent an incomplete request. Please reload and try again.',
  'bad-body': 'The page sent a request the server did not understand. Please reload and try again.',
  'invalid-body': 'The page sent a request the server did not understand. Please reload and try again.',
  'malformed-json': 'The page sent a request the server did not understand. Please reload and try again.',
  'unsupported-media-type': 'The page sent a request the server did not understand. Please reload and try again.',
  'body-too-large': 'That request is too large.',
  'bad-request': 'The server did not understand that request.',
  'method-not-allowed': 'The server does not allow that here.',
  'bad-outcome': 'That payment outcome is not one the demo provider knows.',
  'bad-payment-metadata': 'The payment could not be matched to a booking.',
  'bad-currency': 'The payment was in the wrong currency.',
  // Search
  'empty-query': 'Type something to search for.',
  'no-search-terms': 'Type a word or two to search for.',
  'query-too-long': 'That search is too long — try fewer words.',
  'city-too-long': 'That city name is too long.',
  'bad-date': 'One of the dates is not a date.',
  'bad-date-range': 'The "from" date is after the "to" date.',
  'bad-page': 'That page of results does not exist.',
  'page-out-of-range': 'There are no more results.',
  'bad-query': 'Something in that search is not right.',
  'malformed-query': 'Something in that search is not right.',
  'bad-available': 'The availability filter is not right.',
  'search-unavailable': 'Search is unavailable right now. Please try again in a moment.',
  // Reads and streams
  'bad-position': 'The page asked for an impossible moment. Please reload.',
  'bad-last-event-id': 'The live updates could not resume. Please reload the page.',
  'position-not-visible': 'Your change is still on its way. Please try again in a moment.',
  'catching-up': 'The server is catching up. Please try again in a moment.',
  'bad-instant': 'That moment is not one the server understands.',
  'history-too-deep': 'That is too far back to look up.',
  // The service itself
  'overloaded': 'Lots of fans are trying at once. Please try again in a moment.',
  'rate-limited': 'That was a lot of requests in a short time. Please wait a moment and try again.',
  'journal-unavailable': 'We cannot record bookings right now. Please try again in a moment.',
  'not-owner': 'This event is moving between servers. Please try again in a moment.',
  'internal': 'Something went wrong on our side. Please try again.',
};

/** The short name of a problem type, `urn:frontrow:problem:seats-unavailable` → `seats-unavailable`. */
export function problemName(type) {
  if (typeof type !== 'string' || type === '' || type === 'about:blank') return 'unknown';
  return type.slice(type.lastIndexOf(':') + 1);
}

/** A human sentence for a problem body. Unknown kinds fall back to the server's own `detail`. */
export function sentence(problem) {
  const name = problemName(problem?.type);
  const known = SENTENCES[name];
  if (known) return known;
  if (typeof problem?.detail === 'string' && problem.detail) {
    const d = problem.detail;
    return d.charAt(0).toUpperCase() + d.slice(1) + (/[.!?]$/.test(d) ? '' : '.');
  }
  return 'Something went wrong. Please try again.';
}

/** An API answer that was not a success. `retryAfter`: the seconds its `Retry-After` asked for. */
export class ApiError extends Error {
  constructor(status, problem, retryAfter = null) {
    super(sentence(problem));
    this.status = status;
    this.problem = problem;
    this.name = problemName(problem?.type);
    this.retryAfter = retryAfter;
  }
}

/** `Retry-After` in seconds (it is either a number of seconds or a date), or null. */
function retryAfterOf(response) {
  const value = response.headers.get('Retry-After')?.trim();
  if (!value) return null;
  if (/^[0-9]+$/.test(value)) return Number(value);
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, (at - Date.now()) / 1000);
}

/** How many times one call is repeated by itself after a `429`, a `503` or no answer at all. */
const RETRIES = 3;
/** The longest `Retry-After` the page waits out by itself; after a longer one the fan decides. */
const LONGEST_WAIT_S = 10;

/**
 * How long to wait before the `attempt`th repeat of a call that failed with `error`, or null not
 * to: after a `429` or `503` that says when to come back, and not too far off, that long; after
 * no answer at all (the request may or may not have arrived) 1, 2, then 4 s. A random part of up
 * to half as long again spreads out a crowd that was turned away at the same moment.
 */
function waitBeforeRetry(error, attempt) {
  if (!(error instanceof ApiError)) return null;
  let wait = null;
  if (error.status === 0) wait = 2 ** attempt;
  else if ((error.status === 429 || error.status === 503) && error.retryAfter !== null && error.retryAfter <= LONGEST_WAIT_S) {
    wait = Math.max(error.retryAfter, 0.5);
  }
  return wait === null ? null : wait * (1 + Math.random() / 2);
}

function sleep(seconds, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, seconds * 1000);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason ?? new DOMException('aborted', 'AbortError'));
    }, { once: true });
  });
}

/** A network failure (no answer at all). */
function offline() {
  return new ApiError(0, { type: 'urn:frontrow:problem:offline', detail: 'We could not reach FrontRow. Check your connection and try again' });
}

/**
 * Calls the API. `body` is sent as JSON; `headers` are added; `auth` (default true) sends the
 * signed-in customer's token. Resolves with the parsed JSON (or null for an empty answer);
 * rejects with ApiError.
 *
 * A call that is safe to repeat (a GET, or a write with an `Idempotency-Key`, which the server
 * answers once however often it is sent) is repeated by itself, up to three times, when it is
 * refused with `429` or `503` and a `Retry-After` (after waiting as long as it was asked to) or
 * gets no answer at all (a write whose answer was lost is then answered from the first). `onRetry(error, seconds)` hears of each wait (to tell the fan), and `onRetry(null)` once
 * the call is over after one.
 */
export async function api(method, path, { body, headers = {}, auth = true, signal, onRetry } = {}) {
  const repeatable = method === 'GET' || Object.keys(headers).some((h) => h.toLowerCase() === 'idempotency-key');
  let waited = false;
  try {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await once(method, path, { body, headers, auth, signal });
      } catch (e) {
        const wait = repeatable && attempt < RETRIES ? waitBeforeRetry(e, attempt) : null;
        if (wait === null) throw e;
        waited = true;
        onRetry?.(e, wait);
        await sleep(wait, signal);
      }
    }
  } finally {
    if (waited) onRetry?.(null);
  }
}

/** One request of [`api`]. */
async function once(method, path, { body, headers, auth, signal }) {
  const h = { Accept: 'application/json', ...headers };
  if (body !== undefined) h['Content-Type'] = 'application/json';
  const tok = auth ? token() : null;
  if (tok) h.Authorization = `Bearer ${tok}`;
  let response;
  try {
    response = await fetch(path, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body), signal });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw offline();
  }
  const text = await response.text();
  let json = null;
  if (text) {
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
  }
  if (!response.ok) {
    const problem = json && typeof json === 'object' ? json : { type: 'about:blank', detail: '' };
    if (response.status === 401 && tok) signOut();
    throw new ApiError(response.status, problem, retryAfterOf(response));
  }
  return json;
}

export const get = (path, options) => api('GET', path, options);
export const post = (path, body, options = {}) => api('POST', path, { ...options, body });
