// Who is signed in, and what the page keeps across reloads. Everything lives in sessionStorage
// (one tab, gone when it closes): never in localStorage, cookies or URLs.

const TOKEN = 'frontrow.token';
const CUSTOMER = 'frontrow.customer';
const listeners = new Set();

export function token() {
  return sessionStorage.getItem(TOKEN);
}

export function customer() {
  return sessionStorage.getItem(CUSTOMER);
}

export function signedIn() {
  return token() !== null;
}

/** Keeps `tok` as this tab's customer token; `name` is what the header shows. */
export function signIn(tok, name) {
  sessionStorage.setItem(TOKEN, tok);
  sessionStorage.setItem(CUSTOMER, name);
  notify();
}

export function signOut() {
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(CUSTOMER);
  notify();
}

/** Calls `fn` whenever the tab signs in or out. */
export function onChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function notify() {
  for (const fn of listeners) fn();
}

/** A JSON value kept for this tab under `frontrow.KEY` (the queue ticket, the open hold). */
export function keep(key, value) {
  if (value === null || value === undefined) sessionStorage.removeItem(`frontrow.${key}`);
  else sessionStorage.setItem(`frontrow.${key}`, JSON.stringify(value));
}

export function kept(key) {
  const raw = sessionStorage.getItem(`frontrow.${key}`);
  if (raw === null) return null;
  try {
    return JSON.parse(raw);
  } catch {
    return null;
  }
}

/** The customer (`sub`) of a JWT, or null when the token is not one. */
export function customerOf(tok) {
  const claims = tok.split('.')[1];
  if (!claims) return null;
  try {
    const json = atob(claims.replace(/-/g, '+').replace(/_/g, '/'));
    const sub = JSON.parse(json).sub;
    return typeof sub === 'string' ? sub : null;
  } catch {
    return null;
  }
}
