// The event page's checkout: holding seats (picked or best available), the countdown to
// `hold_until`, release, paying through the demo provider, and the confirmation.

import { ApiError, get, post } from '../lib/api.js';
import { el, mmss, money, newKey, seatName } from '../lib/format.js';
import { clearMessage, retryNotice, showMessage, showProblem } from '../lib/layout.js';
import { keep, kept, signedIn } from '../lib/session.js';

const $ = (id) => document.getElementById(id);

/**
 * Checkout for one event. `map` is the SeatMap; `admission()` gives the waiting room's
 * admission token (or null).
 */
export function createCheckout({ eventId, details, map, admission }) {
  const key = `hold.${eventId}`;
  const currency = details.currency;
  let hold = null; // the reservation being paid for
  let ticking = 0;
  let pending = null; // { text, key }: a reservation asked for, kept so a retry reuses its key
  let releasing = false; // the fan's own release is on its way: its seats come back by it
  let closed = false; // the event has started: no panel to pick, hold or pay comes back
  const inFlight = new Set(); // seats of a reservation on its way: their change is ours
  const sectionNames = new Map(details.seat_map.sections.map((s) => [s.code, s.name]));
  const named = (id) => seatName(id, sectionNames);

  function seatList(target, seats, prices) {
    target.replaceChildren(...seats.map((id) => el('li', { className: 'picked', 'data-seat': id },
      el('span', {}, named(id)), prices ? el('span', { className: 'price' }, money(prices.get(id), currency)) : null)));
  }

  function showPanels(shown) {
    const which = closed && shown !== 'done' ? null : shown;
    $('selection-panel').hidden = which !== 'select';
    $('hold-panel').hidden = which !== 'hold';
    $('confirmation').hidden = which !== 'done';
  }

  function tick() {
    if (!hold) return;
    const left = (new Date(hold.hold_until) - Date.now()) / 1000;
    $('hold-countdown').textContent = mmss(left);
    $('hold-countdown').setAttribute('aria-label', `${Math.floor(left / 60)} minutes ${Math.floor(left % 60)} seconds left to pay`);
    const warn = left <= 60;
    if (warn && $('hold-warning').hidden) $('hold-warning').hidden = false;
    $('hold-panel').classList.toggle('hold-ending', warn);
    if (left <= 0) lapsed();
  }

  function lapsed() {
    stop();
    showMessage('Your hold ended and your seats were released. You can pick seats again.', { problem: 'hold-expired' });
  }

  /**
   * The seat stream says `seatIds` are free again. If they are the open hold's (and the fan is
   * not releasing it), the server ended the hold: its clock decides when a hold lapses, and this
   * browser's may be behind.
   */
  function freed(seatIds) {
    if (!hold || releasing || !seatIds.some((id) => hold.seats.includes(id))) return;
    lapsed();
  }

  function stop() {
    clearInterval(ticking);
    ticking = 0;
    const seats = hold?.seats ?? [];
    hold = null;
    map.refresh(seats); // no longer drawn as the fan's
    keep(key, null);
    showPanels('select');
  }

  function showHold(reservation) {
    hold = reservation;
    map.refresh(reservation.seats); // drawn as the fan's from now on
    keep(key, { reservation_id: reservation.reservation_id });
    seatList($('hold-seats'), reservation.seats, null);
    $('hold-total').textContent = money(reservation.amount.amount, reservation.amount.currency);
    $('hold-warning').hidden = true;
    showPanels('hold');
    clearInterval(ticking);
    ticking = setInterval(tick, 250);
    tick();
    $('pay-button').focus();
  }

  /** The booked panel; `position` (the payment's, for `?after=`) makes "See all my bookings" wait
   * until the ledger shows this booking. */
  function showConfirmation(reservation, position) {
    stop();
    $('my-bookings-link').href = position ? `/me?after=${encodeURIComponent(position)}` : '/me';
    $('booking-id').textContent = reservation.reservation_id;
    seatList($('confirmation-seats'), reservation.seats, null);
    $('confirmation-amount').textContent = money(reservation.amount.amount, reservation.amount.currency);
    showPanels('done');
    $('confirmation').focus();
  }

  async function reserve(body) {
    if (!signedIn()) {
      showMessage('Please sign in (at the top of the page) to hold seats.', { problem: 'sign-in' });
      $('signin-name')?.focus();
      return;
    }
    // The same request again (a retry after a failure) reuses its key: the server answers with
    // the reservation it already made instead of holding more seats.
    const text = JSON.stringify(body);
    if (!pending || pending.text !== text) pending = { text, key: newKey() };
    const headers = { 'Idempotency-Key': pending.key };
    const token = admission();
    if (token) headers['FrontRow-Admission'] = token;
    const buttons = [$('hold-button'), $('best-button'), ...document.querySelectorAll('.zone-hold')];
    buttons.forEach((b) => { b.disabled = true; });
    for (const id of body.seats ?? []) inFlight.add(id);
    try {
      const reservation = await post(`/events/${eventId}/reservations`, body, { headers, onRetry: retryNotice });
      pending = null;
      clearMessage();
      map.clearPicks();
      map.apply(reservation.seats, 'held');
      showHold(reservation);
    } catch (e) {
      if (e instanceof ApiError && e.status !== 0 && e.status < 500) pending = null;
      if (e instanceof ApiError && e.name === 'seats-unavailable' && Array.isArray(e.problem.seats)) {
        // The map may not have heard yet: show those seats as taken now.
        map.apply(e.problem.seats, 'held');
        const words = e.problem.seats.map(named).join('; ');
        showMessage(`Sorry — someone else just took ${words}. Please pick other seats.`, { problem: e.name });
      } else if (e instanceof ApiError && e.name === 'not-enough-places' && Number.isInteger(e.problem.available)) {
        showMessage(`Only ${e.problem.available} standing places are left there: ask for that many or fewer.`, { problem: e.name });
      } else if (e instanceof ApiError && e.name === 'bad-seat-count' && e.problem.max_seats) {
        showMessage(`You can hold up to ${e.problem.max_seats} seats in one order.`, { problem: e.name });
      } else if (e instanceof ApiError && e.name === 'not-on-sale' && e.problem.onsale_at) {
        showMessage(`Tickets are not on sale yet: the onsale starts ${new Date(e.problem.onsale_at).toLocaleString()}.`, { problem: e.name });
      } else {
        showProblem(e);
      }
    } finally {
      inFlight.clear();
      buttons.forEach((b) => { b.disabled = false; });
      refreshSelection();
    }
  }

  async function release() {
    if (!hold) return;
    const h = hold;
    releasing = true;
    try {
      const answer = await post(`/events/${eventId}/reservations/${h.reservation_id}/release`, undefined, { headers: { 'Idempotency-Key': `release-${h.reservation_id}` }, onRetry: retryNotice });
      map.apply(h.seats, 'available');
      stop();
      showMessage(answer.status === 'released' ? 'Your seats were released.' : 'Your hold has ended.', { tone: 'ok', problem: '' });
    } catch (e) {
      showProblem(e);
    } finally {
      releasing = false;
    }
  }

  async function pay() {
    if (!hold) return;
    const h = hold;
    $('pay-button').disabled = true;
    try {
      // Keyed, so pressing Pay again after a lost answer delivers the same payment, not a second.
      const answer = await post('/demo/payments', { event_id: eventId, reservation_id: h.reservation_id }, { headers: { 'Idempotency-Key': `pay-${h.reservation_id}` }, onRetry: retryNotice });
      if (answer.reservation_status === 'booked') {
        showConfirmation(h, answer.position);
        showMessage('Payment received — your seats are booked.', { tone: 'ok', problem: '' });
      } else if (answer.outcome === 'refunded') {
        stop();
        showMessage('Your hold had ended and the seats were taken before the payment arrived, so the payment was refunded.', { problem: 'payment-refunded' });
      } else {
        const current = await get(`/events/${eventId}/reservations/${h.reservation_id}`);
        if (current.status === 'booked') showConfirmation(current, current.position);
        else {
          stop();
          showMessage('The payment did not go through and your seats were released.', { problem: 'payment-failed' });
        }
      }
    } catch (e) {
      showProblem(e);
    } finally {
      $('pay-button').disabled = false;
    }
  }

  /**
   * The event has started, so the server takes no hold or payment any more: an open hold can no
   * longer be paid, and the fan is told so. The confirmation of a booking stays on the page.
   */
  function close() {
    const unpaid = hold !== null;
    closed = true;
    if (hold) stop();
    else showPanels($('confirmation').hidden ? null : 'done');
    if (unpaid) showMessage('This event has started, so its sales closed before your held seats were paid for.', { problem: 'sales-closed' });
  }

  /** The selection panel: picks, total, the limit, and whether "hold" is possible. */
  function refreshSelection() {
    const picks = map.picks();
    const prices = new Map(picks.map((p) => [p.id, p.price]));
    seatList($('selection'), picks.map((p) => p.id), prices);
    if (!picks.length) $('selection').append(el('li', { className: 'empty' }, 'Pick seats on the map, or ask for the best available.'));
    $('total').textContent = money(picks.reduce((sum, p) => sum + p.price, 0), currency);
    $('selection-limit').textContent = `Up to ${details.max_seats_per_order} seats per order.`;
    $('hold-button').disabled = picks.length === 0;
  }

  /** After a reload: the hold this tab was paying for, if it still stands. */
  async function restore() {
    const saved = kept(key);
    if (!saved || !signedIn()) return;
    try {
      const r = await get(`/events/${eventId}/reservations/${saved.reservation_id}`);
      if (r.status === 'held' && new Date(r.hold_until) > Date.now()) showHold(r);
      else if (r.status === 'booked') showConfirmation(r, r.position);
      else {
        keep(key, null);
        if (r.status === 'expired') showMessage('Your hold ended and your seats were released. You can pick seats again.', { problem: 'hold-expired' });
      }
    } catch {
      keep(key, null);
    }
  }

  $('hold-button').addEventListener('click', () => reserve({ seats: map.picks().map((p) => p.id) }));
  $('best-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const count = Number($('best-count').value);
    if (!Number.isInteger(count) || count < 1 || count > details.max_seats_per_order) {
      showMessage(`Ask for 1 to ${details.max_seats_per_order} seats.`, { problem: 'bad-seat-count' });
      return;
    }
    reserve({ best_available: { section: $('best-section').value, count } });
  });
  $('release-button').addEventListener('click', release);
  $('pay-button').addEventListener('click', pay);
  $('best-count').max = String(details.max_seats_per_order);
  $('best-count').value = String(Math.min(2, details.max_seats_per_order));
  refreshSelection();

  return { reserve, refreshSelection, restore, named, freed, close, holding: () => hold, ours: (id) => inFlight.has(id) || (hold?.seats.includes(id) ?? false) };
}
