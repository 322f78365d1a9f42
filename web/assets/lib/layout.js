// The frame every page shares: the header (brand, navigation, signing in) and the message line.

import { post, ApiError } from './api.js';
import { customer, customerOf, onChange, signIn, signOut, signedIn } from './session.js';
import { el } from './format.js';

const NAV = [
  { href: '/', label: 'What\'s on' },
  { href: '/me', label: 'My bookings' },
];

/** Shows `text` in the page's message line (role=alert). `problem` names the problem type. */
export function showMessage(text, { problem = '', tone = 'error' } = {}) {
  const box = document.getElementById('message');
  if (!box) return;
  delete box.dataset.retry;
  box.textContent = text;
  box.dataset.problem = problem;
  box.dataset.tone = tone;
  box.hidden = false;
}

/** Shows an error from `api()` (or anything thrown) as a sentence; never as raw JSON. */
export function showProblem(error) {
  if (error instanceof ApiError) showMessage(error.message, { problem: error.name });
  else showMessage('Something went wrong on this page. Please reload and try again.', { problem: 'page-error' });
  if (!(error instanceof ApiError)) console.error(error);
}

export function clearMessage() {
  const box = document.getElementById('message');
  if (!box) return;
  delete box.dataset.retry;
  box.hidden = true;
  box.textContent = '';
  box.dataset.problem = '';
}

/** Why a call is being repeated, in the fan's words (the sentences of api.js say "try again"). */
const BUSY = {
  'offline': 'We could not reach FrontRow.',
  'overloaded': 'Lots of fans are trying at once.',
  'rate-limited': 'That was a lot of requests in a short time.',
  'journal-unavailable': 'We cannot record bookings for a moment.',
  'not-owner': 'This event is moving between servers.',
  'catching-up': 'The server is catching up.',
  'position-not-visible': 'Your change is still on its way.',
};

/**
 * `api()`'s `onRetry` for pages: says the server turned the call away and when the page tries
 * again by itself (said once, not counted down: the line is an alert, and a screen reader would
 * read every tick); `retryNotice(null)` takes that notice away when the call is over (an error
 * the page shows after it replaces it anyway).
 */
export function retryNotice(error, seconds) {
  const box = document.getElementById('message');
  if (!box) return;
  if (error === null) {
    if (box.dataset.retry) clearMessage();
    return;
  }
  const reason = BUSY[error.name] ?? 'FrontRow is busy.';
  showMessage(`${reason} Trying again for you in ${Math.max(1, Math.ceil(seconds))} s…`, { problem: error.name, tone: 'warn' });
  box.dataset.retry = 'waiting';
}

/** A demo name as a customer id: spaces become dots; other characters must already be allowed. */
function customerId(name) {
  const id = name.trim().replace(/\s+/g, '.');
  return /^[A-Za-z0-9_.@+-]{1,64}$/.test(id) ? id : null;
}

async function signInByName(name) {
  const id = customerId(name);
  if (!id) {
    showMessage('Please use up to 64 letters, digits, spaces or . _ @ - + in your name.', { problem: 'bad-name' });
    return;
  }
  try {
    const minted = await post('/demo/tokens', { customer: id }, { auth: false });
    signIn(minted.token, name.trim());
    clearMessage();
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) {
      showMessage('This FrontRow does not mint demo tokens: sign in with a token from your account provider.', { problem: 'demo-off' });
      document.getElementById('signin-more')?.setAttribute('open', '');
      document.getElementById('signin-token')?.focus();
    } else {
      showProblem(e);
    }
  }
}

function signInByToken(raw) {
  const tok = raw.trim();
  const who = customerOf(tok);
  if (!who) {
    showMessage('That does not look like a sign-in token. Copy the whole token and try again.', { problem: 'bad-token' });
    return;
  }
  signIn(tok, who);
  clearMessage();
}

/**
 * A form of one labelled `input` and a submit button (`button`: its id and words); submitting
 * it calls `submit` with what was typed, without leaving the page.
 */
function oneFieldForm(props, label, input, button, submit) {
  const form = el('form', props,
    el('label', { for: input.id }, label),
    input,
    el('button', { id: button.id, type: 'submit' }, button.text));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    submit(input.value);
  });
  return form;
}

function signInForm() {
  const form = oneFieldForm({ className: 'signin', id: 'signin-form' }, 'Your name',
    el('input', { id: 'signin-name', type: 'text', autocomplete: 'nickname', required: true, maxLength: 64 }),
    { id: 'signin-button', text: 'Sign in' }, signInByName);
  const tokenForm = oneFieldForm({ className: 'signin-token-form' }, 'Token from your account provider',
    el('input', { id: 'signin-token', type: 'password', autocomplete: 'off', spellcheck: false }),
    { id: 'signin-token-button', text: 'Use token' }, signInByToken);
  const more = el('details', { id: 'signin-more', className: 'signin-more' },
    el('summary', {}, 'Have a token?'), tokenForm);
  return el('div', { className: 'signin-area' }, form, more);
}

function whoAmI() {
  const out = el('button', { id: 'signout', type: 'button', className: 'ghost' }, 'Sign out');
  out.addEventListener('click', () => signOut());
  return el('div', { className: 'signin-area signed-in' },
    el('span', {}, 'Signed in as ', el('strong', { id: 'whoami' }, customer() ?? '')), out);
}

function renderAccount(slot) {
  slot.replaceChildren(signedIn() ? whoAmI() : signInForm());
}

/** Draws the header into `#site-header` and keeps its account area current. */
export function mountLayout() {
  const header = document.getElementById('site-header');
  if (!header) return;
  const here = location.pathname;
  const nav = el('nav', { 'aria-label': 'Main' }, el('ul', {},
    NAV.map((item) => el('li', {}, el('a', {
      href: item.href,
      'aria-current': item.href === here ? 'page' : undefined,
    }, item.label)))));
  const account = el('div', { className: 'account' });
  header.replaceChildren(el('a', { className: 'brand', href: '/' }, el('span', { 'aria-hidden': 'true' }, '▦'), ' FrontRow'), nav, account);
  renderAccount(account);
  onChange(() => renderAccount(account));
}
