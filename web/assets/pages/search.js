// `/`: what is on sale. The catalogue (GET /events, soonest first) when the box is empty;
// as-you-type search over GET /search otherwise (typos forgiven, matches highlighted). Both
// only of events that have not started, filtered by city and dates on the server, and read 20
// at a time ("Show more events").
// Arrow keys move between results, Enter opens one.

import { get, ApiError } from '../lib/api.js';
import { el, money, when } from '../lib/format.js';
import { clearMessage, mountLayout, showProblem } from '../lib/layout.js';
import { pager } from '../lib/paging.js';

const input = document.getElementById('search-input');
const city = document.getElementById('city-filter');
const from = document.getElementById('from-filter');
const to = document.getElementById('to-filter');
const results = document.getElementById('results');
const status = document.getElementById('results-status');

/** The last page of a search that can be read (the API's `page` is 1 to 50). */
const MAX_SEARCH_PAGE = 50;

let controller = null;
let timer = 0;

const ENTITIES = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': '\'', '&#x27;': '\'' };
const unescape = (s) => s.replace(/&(amp|lt|gt|quot|#39|#x27);/g, (m) => ENTITIES[m]);

/** The server's highlighted (HTML-escaped, matches in <em>) text as nodes, without innerHTML. */
function highlighted(html) {
  const nodes = [];
  const parts = html.split(/<\/?(?:em|mark)>/);
  parts.forEach((part, i) => {
    if (!part) return;
    const text = unescape(part);
    nodes.push(i % 2 === 1 ? el('mark', {}, text) : document.createTextNode(text));
  });
  return nodes;
}

function field(hit, name) {
  return hit.highlights?.[name] ? highlighted(hit.highlights[name]) : [hit[name]];
}

function seatsLeft(left, total, soldOut) {
  if (soldOut || left === 0) return el('span', { className: 'badge badge-sold' }, 'Sold out');
  const few = total > 0 && left / total < 0.1;
  return el('span', { className: few ? 'badge badge-few' : 'badge' }, `${left.toLocaleString()} of ${total.toLocaleString()} seats left`);
}

function card(event, { hit = null } = {}) {
  const h = hit ?? event;
  const price = hit ? `from ${money(hit.price.min, hit.price.currency)}` : '';
  const onsale = new Date(event.onsale_at) > new Date() ? el('span', { className: 'badge badge-soon' }, `On sale ${when(event.onsale_at)}`) : null;
  const left = hit ? seatsLeft(hit.seats_left, hit.seats_total, hit.sold_out) : seatsLeft(event.seats.available, event.seats.total, false);
  return el('a', { className: 'result', href: `/e/${event.event_id}`, 'data-event-id': event.event_id, role: 'listitem' },
    el('span', { className: 'result-title' }, ...(hit ? field(h, 'title') : [event.title])),
    el('span', { className: 'result-artist' }, ...(hit ? field(h, 'artist') : [event.artist])),
    el('span', { className: 'result-where' }, ...(hit ? field(h, 'venue') : [event.venue]), ', ', ...(hit ? field(h, 'city') : [event.city])),
    el('time', { className: 'result-when', dateTime: event.starts_at }, when(event.starts_at)),
    el('span', { className: 'result-facts' }, left, onsale, price ? el('span', { className: 'price' }, price) : null));
}

function show(cards, total, words) {
  results.replaceChildren(...cards);
  status.textContent = total === 0 ? `No events ${words}` : `${total} event${total === 1 ? '' : 's'} ${words}`;
  if (total === 0) {
    results.append(el('p', { className: 'empty' }, input.value.trim()
      ? 'Nothing matches. Check the spelling, or try the artist or the city.'
      : 'Nothing is on sale with these filters.'));
  }
}

/** The filters as the fan set them (`q` for a search), as the page's address keeps them. */
function filters() {
  const params = new URLSearchParams();
  for (const [key, value] of [['q', input.value.trim()], ['city', city.value.trim()], ['from', from.value], ['to', to.value]]) {
    if (value) params.set(key, value);
  }
  return params;
}

/** The earliest start the list shows: now, or the fan's From day if that is later. An event
 * that has started is no longer on sale (the server closes its sales). `Date.now()`, so that a
 * test can move the page's clock. */
function earliest() {
  const now = new Date(Date.now());
  return from.value && new Date(`${from.value}T00:00:00Z`) > now ? from.value : now.toISOString();
}

/** Since when the list shown starts: fixed when it is shown afresh, so its pages agree. */
let since = null;

/** The query of a read of the list: the filters, from `since`, and `extra`. */
function query(extra = {}) {
  const params = filters();
  params.set('from', since);
  for (const [key, value] of Object.entries(extra)) params.set(key, value);
  return params;
}

/** One page of the list: the catalogue's at a cursor, or a search's by page number. A To day
 * gone by is an empty list, not a reversed range (unless the fan's From day is after it: the
 * server says so). */
async function readPage(next, signal) {
  const gone = to.value && new Date(`${to.value}T23:59:59Z`) < new Date(since) && !(from.value > to.value);
  if (gone) return { items: [], next: null, total: 0 };
  if (!input.value.trim()) {
    const list = await get(`/events?${query(next ? { cursor: next } : {})}`, { auth: false, signal });
    return { items: list.events.map((e) => card(e)), next: list.next, total: list.total };
  }
  const page = next ?? 1;
  const found = await get(`/search?${query({ page })}`, { auth: false, signal });
  const more = page < found.pages && page < MAX_SEARCH_PAGE;
  return { items: found.hits.map((hit) => card(hit, { hit })), next: more ? page + 1 : null, total: found.total };
}

const more = pager(results, {
  id: 'more-events',
  label: 'Show more events',
  read: (next) => readPage(next, controller?.signal),
});

async function refresh() {
  controller?.abort();
  controller = new AbortController();
  const q = input.value.trim();
  const params = filters();
  history.replaceState(null, '', params.toString() ? `/?${params}` : '/');
  since = earliest();
  results.setAttribute('aria-busy', 'true');
  try {
    const page = await readPage(null, controller.signal);
    show(page.items, page.total, q ? `${page.total === 1 ? 'matches' : 'match'} “${q}”` : 'on sale');
    more.show(page.next);
    clearMessage();
  } catch (e) {
    if (e.name === 'AbortError') return;
    showProblem(e);
    if (e instanceof ApiError) status.textContent = e.message;
    // What was listed before answered other filters: it goes rather than pass for this answer.
    more.clear();
  } finally {
    results.removeAttribute('aria-busy');
  }
}

function soon() {
  clearTimeout(timer);
  timer = setTimeout(refresh, 150);
}

/** Up/Down from the box or a result move between results; Enter follows the link. */
function keys(e) {
  const cards = [...results.querySelectorAll('a.result')];
  if (!cards.length || (e.key !== 'ArrowDown' && e.key !== 'ArrowUp')) return;
  const at = cards.indexOf(document.activeElement);
  let next;
  if (e.key === 'ArrowDown') next = at < 0 ? 0 : Math.min(cards.length - 1, at + 1);
  else if (at <= 0) {
    input.focus();
    e.preventDefault();
    return;
  } else next = at - 1;
  cards[next].focus();
  e.preventDefault();
}

mountLayout();
const initial = new URLSearchParams(location.search);
input.value = initial.get('q') ?? '';
city.value = initial.get('city') ?? '';
from.value = initial.get('from') ?? '';
to.value = initial.get('to') ?? '';
input.addEventListener('input', soon);
city.addEventListener('input', soon);
from.addEventListener('change', refresh);
to.addEventListener('change', refresh);
document.getElementById('search-form').addEventListener('submit', (e) => {
  e.preventDefault();
  clearTimeout(timer);
  refresh();
});
input.addEventListener('keydown', keys);
results.addEventListener('keydown', keys);
refresh();
