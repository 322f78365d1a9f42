// `/e/{event_id}`: the event, its price tiers, sections with counts and "from" prices, the live
// seat map, checkout and (when the event has one) the waiting room.

import { get } from '../lib/api.js';
import { el, money, seatName, when } from '../lib/format.js';
import { mountLayout, showMessage, showProblem } from '../lib/layout.js';
import { SeatMap, TIER_COLOURS } from '../lib/seatmap.js';
import { createCheckout } from './hold.js';
import { createQueue } from './queue.js';
import { createZones, seated } from './zones.js';

const $ = (id) => document.getElementById(id);
const eventId = decodeURIComponent(location.pathname.split('/')[2] ?? '');

let markReady;
let deltas = 0;
let position = null;
let map = null;
let checkout = null;
let queue = null;
let zones = null;
let stream = null;
let sectionsDirty = false;

// Test hooks (real code paths): see web/CONTRACT.md.
window.frontrowMap = {
  ready: new Promise((resolve) => { markReady = resolve; }),
  status: (seatId) => map?.statusOf(seatId) ?? null,
  selected: (seatId) => map?.isPicked(seatId) ?? false,
  words: (seatId) => map?.wordsOf(seatId) ?? null,
  seatCenter: (seatId) => map?.seatCenter(seatId) ?? null,
  position: () => position,
  deltasApplied: () => deltas,
  zone: (code) => zones?.counts(code) ?? null,
};

/** Whether the event has started: the server then closes its sales (holds, joins, payments). */
const hasStarted = (d) => new Date(d.starts_at) <= Date.now();

/** What a started event's page shows: the sentence that sales are closed, a map on which nothing
 * can be picked, and no panel to pick, hold, pay or queue (the server refuses them all now). */
function closeSales() {
  $('event-onsale').textContent = 'This event has started: sales are closed.';
  $('event-onsale').classList.add('event-closed');
  map.closed = 'Sales for this event have closed: it has started.';
  map.clearPicks();
  checkout?.close();
  for (const id of ['selection-panel', 'best-form', 'zones-panel', 'queue-panel', 'hold-panel']) $(id).hidden = true;
}

/** Closes the page's sales when the event starts while the page is open. The clock is read
 * again at least every second, so a clock set forward (or a computer woken from sleep) past the
 * start closes them within a second rather than when a timer set by the old time runs out. */
function closeSalesAtStart(d) {
  const wait = new Date(d.starts_at) - Date.now();
  if (wait <= 0) closeSales();
  else setTimeout(() => closeSalesAtStart(d), Math.min(wait, 1000));
}

function renderDetails(d) {
  document.title = `${d.title} — FrontRow`;
  $('event-title').textContent = d.title;
  $('event-artist').textContent = d.artist;
  $('event-venue').textContent = `${d.venue}, ${d.city}`;
  $('event-date').textContent = when(d.starts_at);
  $('event-date').dateTime = d.starts_at;
  // A started event's line is closeSales()'s, set right after this on the same load.
  const onsale = new Date(d.onsale_at);
  if (onsale > Date.now()) $('event-onsale').textContent = `On sale ${when(d.onsale_at)}. Holds last ${d.hold_minutes} minutes.`;
  else $('event-onsale').textContent = `On sale now. Holds last ${d.hold_minutes} minutes; up to ${d.max_seats_per_order} seats per order.`;
  $('event-onsale').classList.remove('event-closed');
  $('tier-legend').replaceChildren(...d.seat_map.tiers.map((t, i) => {
    const swatch = el('span', { className: 'swatch', 'aria-hidden': 'true' });
    swatch.style.background = TIER_COLOURS[i % TIER_COLOURS.length];
    return el('li', { className: 'tier', 'data-tier': t.code }, swatch,
      el('span', { className: 'tier-name' }, t.name), el('span', { className: 'tier-price' }, money(t.price, d.currency)));
  }));
}

function renderSections(d) {
  const sections = map.sectionList();
  $('sections').replaceChildren(...sections.map((s) => {
    const button = el('button', { type: 'button', className: 'section', 'data-section': s.code, 'aria-pressed': 'false' },
      el('span', { className: 'section-name' }, s.name),
      el('span', { className: 'section-available' }, ''),
      el('span', { className: 'section-from' }, `from ${money(s.minPrice, d.currency)}`));
    button.addEventListener('click', () => {
      map.fit(map.sectionByCode(s.code));
      $('seat-map').focus({ preventScroll: true });
    });
    return button;
  }));
  $('best-section').replaceChildren(...sections.map((s) => el('option', { value: s.code }, `${s.name} (from ${money(s.minPrice, d.currency)})`)));
  updateSectionCounts();
}

function updateSectionCounts() {
  sectionsDirty = false;
  for (const s of map.sectionList()) {
    const button = $('sections').querySelector(`[data-section="${CSS.escape(s.code)}"]`);
    if (!button) continue;
    button.querySelector('.section-available').textContent = s.available === 0 ? 'Sold out' : `${s.available.toLocaleString()} left`;
    button.classList.toggle('sold-out', s.available === 0);
    button.setAttribute('aria-label', `Section ${s.name}: ${s.available === 0 ? 'sold out' : `${s.available} of ${s.total} seats left`}, from ${money(s.minPrice, map.currency)}`);
  }
}

function scheduleSectionCounts() {
  if (sectionsDirty) return;
  sectionsDirty = true;
  requestAnimationFrame(updateSectionCounts);
}

/** Live seat changes, resumed from the map's position (see `?last_event_id=` in the README). */
function openStream(from) {
  stream?.close();
  stream = new EventSource(`/events/${eventId}/seats/stream?last_event_id=${encodeURIComponent(from)}`);
  stream.addEventListener('seat', (e) => {
    const change = JSON.parse(e.data);
    position = e.lastEventId;
    deltas += 1;
    map.apply(change.seats, change.status, `delta-painted-${deltas}`, position);
    if (change.status === 'available') checkout?.freed(change.seats);
    scheduleSectionCounts();
  });
  stream.addEventListener('zone', (e) => {
    // A standing zone's counts now (a state): the places of the `seat` event before it are not
    // drawn one by one.
    zones?.update(JSON.parse(e.data));
  });
  stream.addEventListener('snapshot', (e) => {
    // Too far behind to replay: the server sent the whole map.
    const availability = JSON.parse(e.data);
    position = e.lastEventId;
    map.load(seated(availability));
    zones?.load(availability);
    updateSectionCounts();
  });
  stream.addEventListener('reset', async () => {
    // The organizer replaced the seat map: start over.
    stream.close();
    await loadMap();
  });
}

function announceTaken(ids) {
  const theirs = ids.filter((id) => !checkout?.ours(id));
  if (!theirs.length) return;
  showMessage(`Someone else just took ${theirs.map(checkout?.named ?? seatName).join('; ')}. We took it off your picks.`, { problem: 'seats-unavailable' });
}

async function loadMap() {
  const [details, availability] = await Promise.all([
    get(`/events/${eventId}`, { auth: false }),
    get(`/events/${eventId}/availability`, { auth: false }),
  ]);
  renderDetails(details);
  if (!map) {
    map = new SeatMap($('seat-map'), {
      tiers: details.seat_map.tiers,
      currency: details.currency,
      maxSeats: details.max_seats_per_order,
      onPick: () => checkout?.refreshSelection(),
      onTaken: announceTaken,
      ours: (id) => checkout?.ours(id) ?? false,
      describe: (words, alert) => {
        $('map-live').textContent = words;
        if (alert) showMessage(words, { problem: 'seat-unavailable' });
      },
      onScope: (section) => {
        $('map-scope').textContent = section ? `Section ${section.name}` : 'All sections';
        for (const b of $('sections').querySelectorAll('.section')) b.setAttribute('aria-pressed', String(b.dataset.section === section?.code));
      },
    });
  } else {
    map.tiers = details.seat_map.tiers;
    map.tierIndex = new Map(details.seat_map.tiers.map((t, i) => [t.code, i]));
  }
  map.load(seated(availability));
  zones ??= createZones({ details, reserve: (body) => checkout?.reserve(body) });
  zones.load(availability);
  position = availability.position;
  renderSections(details);
  // The map still shows the house of a started event; nothing on it can be picked, held or
  // queued for (also when a reload of the map comes after the start).
  if (hasStarted(details)) closeSales();
  openStream(availability.position);
  return details;
}

async function start() {
  mountLayout();
  if (!eventId) {
    showMessage('That page address does not name an event.', { problem: 'not-found' });
    return;
  }
  let details;
  try {
    details = await loadMap();
  } catch (e) {
    $('event-title').textContent = 'Event not found';
    showProblem(e);
    return;
  }
  requestAnimationFrame(() => {
    performance.mark('map-drawn');
    markReady();
  });
  $('zoom-in').addEventListener('click', () => map.zoom(1.5));
  $('zoom-out').addEventListener('click', () => map.zoom(1 / 1.5));
  $('map-overview').addEventListener('click', () => map.fit(null));
  if (hasStarted(details)) return;
  queue = details.waiting_room ? createQueue({ eventId, details, onAdmitted: () => {} }) : null;
  checkout = createCheckout({ eventId, details, map, admission: () => queue?.admission() ?? null });
  checkout.restore();
  closeSalesAtStart(details);
}

start();
