// `/me`: the signed-in fan's bookings (GET /me/bookings), newest first, a page of 20 at a time
// ("Show more bookings" reads the next), with cancel (refund) while the event has not started.
// `/me?after=PARTITION:OFFSET` (the link after a payment) asks the ledger to answer only once it
// has applied that position, so a booking just made is listed.
// Seats are named by their section's name on the event's map, as the checkout named them (the
// ledger keeps section codes only); an event whose map cannot be read shows the codes.

import { get, post } from '../lib/api.js';
import { el, money, newKey, seatName, when } from '../lib/format.js';
import { clearMessage, mountLayout, retryNotice, showMessage, showProblem } from '../lib/layout.js';
import { pager } from '../lib/paging.js';
import { onChange, signedIn } from '../lib/session.js';

const list = document.getElementById('bookings');
const status = document.getElementById('bookings-status');
const after = new URLSearchParams(location.search).get('after');

/** Event id → its section names (code → name), kept while the page lives: a list read again
 * after a cancel does not read the events again. A read that failed is tried at the next load. */
const namesOf = new Map();

/** Each booked event's section names, one read of `GET /events/{id}` per event. */
async function sectionNames(bookings) {
  const ids = [...new Set(bookings.map((b) => b.event_id))];
  for (const id of ids) {
    if (namesOf.has(id)) continue;
    namesOf.set(id, get(`/events/${id}`, { auth: false })
      .then((details) => new Map(details.seat_map.sections.map((s) => [s.code, s.name])))
      .catch(() => {
        namesOf.delete(id);
        return null;
      }));
  }
  return new Map(await Promise.all(ids.map(async (id) => [id, await namesOf.get(id)])));
}

/** All of them, on every page: "2 bookings", "1 booking, 1 cancelled", "1 cancelled booking". */
function countOf({ booked_count: live, cancelled_count: cancelled }) {
  const plural = (n) => (n === 1 ? '' : 's');
  if (!live && cancelled) return `${cancelled} cancelled booking${plural(cancelled)}`;
  return `${live} booking${plural(live)}${cancelled ? `, ${cancelled} cancelled` : ''}`;
}

function booking(b, names) {
  const cancelled = b.status === 'cancelled';
  const started = new Date(b.starts_at) <= new Date();
  const item = el('article', { className: `booking${cancelled ? ' booking-cancelled' : ''}`, 'data-reservation-id': b.reservation_id, 'aria-labelledby': `b-${b.reservation_id}` },
    el('h2', { id: `b-${b.reservation_id}` }, el('a', { href: `/e/${b.event_id}` }, b.title)),
    el('p', { className: 'booking-facts' }, b.venue, ' · ', el('time', { dateTime: b.starts_at }, when(b.starts_at))),
    el('ul', { className: 'booking-seats' }, b.seats.map((s) => el('li', {}, seatName(s, names)))),
    el('p', {}, 'Paid ', el('strong', { className: 'booking-amount' }, money(b.amount, b.currency)),
      ' · ', el('span', { className: 'booking-status', 'data-status': b.status }, cancelled ? 'Cancelled and refunded' : 'Booked'),
      b.late ? ' (paid after the hold ended)' : ''),
    el('p', { className: 'booking-id' }, 'Booking ', el('code', {}, b.reservation_id)));
  if (!cancelled && !started) {
    const key = newKey();
    const button = el('button', { type: 'button', className: 'cancel-button' }, 'Cancel and refund');
    button.addEventListener('click', async () => {
      if (!confirm(`Cancel your booking for ${b.title}? Your ${b.seats.length} seat${b.seats.length === 1 ? '' : 's'} go back on sale and you get a refund.`)) return;
      button.disabled = true;
      try {
        const refund = await post(`/events/${b.event_id}/reservations/${b.reservation_id}/cancel`, undefined, { headers: { 'Idempotency-Key': key }, onRetry: retryNotice });
        showMessage(`Booking cancelled: ${money(b.amount, b.currency)} will be refunded.`, { tone: 'ok', problem: '' });
        item.classList.add('booking-cancelled');
        item.querySelector('.booking-status').textContent = 'Cancelled and refunded';
        item.querySelector('.booking-status').dataset.status = 'cancelled';
        button.remove();
        recount(refund?.position);
      } catch (e) {
        button.disabled = false;
        showProblem(e);
      }
    });
    item.append(button);
  }
  return item;
}

/** After a cancel: the counts read again once the ledger has the cancellation (`position`),
 * the cards left as they are (the cancelled one already says so), so a fan deep in the list
 * keeps her place. */
async function recount(position) {
  try {
    const answer = await get(position ? `/me/bookings?limit=1&after=${encodeURIComponent(position)}&wait_ms=5000` : '/me/bookings?limit=1');
    status.textContent = countOf(answer);
  } catch (e) {
    showProblem(e);
  }
}

/** One page's bookings as cards, their seats named. */
async function cards(answer) {
  const names = await sectionNames(answer.bookings);
  return answer.bookings.map((b) => booking(b, names.get(b.event_id)));
}

/** The pages after the first, a "Show more bookings" button away. */
const more = pager(list, {
  id: 'more-bookings',
  label: 'Show more bookings',
  async read(next) {
    const answer = await get(`/me/bookings?cursor=${encodeURIComponent(next)}`);
    return { items: await cards(answer), next: answer.next, shown: () => { status.textContent = countOf(answer); } };
  },
  focusOf: (item) => item.querySelector('h2 a'),
});

/** Shows the first page of bookings; `position` (`PARTITION:OFFSET`) waits until the ledger has
 * applied it. */
async function load(position = after) {
  if (!signedIn()) {
    more.clear();
    list.append(el('p', { className: 'empty' }, 'Sign in (at the top of the page) to see your bookings.'));
    status.textContent = '';
    return;
  }
  status.textContent = 'Loading your bookings…';
  try {
    const answer = await get(position ? `/me/bookings?after=${encodeURIComponent(position)}&wait_ms=5000` : '/me/bookings');
    const items = await cards(answer);
    list.replaceChildren(...items);
    more.show(answer.next);
    if (!items.length) list.append(el('p', { className: 'empty' }, 'No bookings yet. ', el('a', { href: '/' }, 'Find something to go to.')));
    status.textContent = countOf(answer);
    clearMessage();
  } catch (e) {
    status.textContent = '';
    // The cards shown may be another list's (before a sign-in): they go with the failed read.
    more.clear();
    showProblem(e);
  }
}

mountLayout();
onChange(load);
load();
