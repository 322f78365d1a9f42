// The event page's waiting room: join, then the fan's place over the status stream
// (EventSource with ?access_token=, resumed with the stream's own ids), the lottery before the
// onsale, admission with its countdown, sold out and the waiting list. The ticket and the
// admission live in sessionStorage, so a reload keeps the place.

import { get, post } from '../lib/api.js';
import { mmss, newKey, roughly, when } from '../lib/format.js';
import { retryNotice, showMessage, showProblem } from '../lib/layout.js';
import { keep, kept, onChange, signedIn, token } from '../lib/session.js';

const $ = (id) => document.getElementById(id);

/** The waiting room of `details` (which has one). `onAdmitted(token|null)` follows admission. */
export function createQueue({ eventId, details, onAdmitted }) {
  const key = `queue.${eventId}`;
  let stream = null;
  let countdown = 0;
  let state = kept(key); // { joinKey, ticket, firstAhead, admission, until }

  const save = () => keep(key, state);

  function admission() {
    return state?.admission && new Date(state.until) > Date.now() ? state.admission : null;
  }

  function setStatus(name, text) {
    $('queue-status').dataset.status = name;
    $('queue-status').textContent = text;
  }

  function joinVisible(visible, label = 'Join the queue') {
    $('queue-join').hidden = !visible;
    $('queue-join').textContent = label;
  }

  function admitted(s) {
    state.admission = s.admission_token;
    state.until = s.admitted_until;
    save();
    onAdmitted(s.admission_token);
    $('admission-box').hidden = false;
    $('queue-choose').hidden = false;
    clearInterval(countdown);
    const tick = () => {
      const left = (new Date(s.admitted_until) - Date.now()) / 1000;
      $('admission-countdown').textContent = mmss(left);
      if (left <= 0) {
        clearInterval(countdown);
        onAdmitted(null);
        setStatus('lapsed', 'Your turn to choose seats has ended.');
      }
    };
    countdown = setInterval(tick, 250);
    tick();
  }

  function notAdmitted() {
    clearInterval(countdown);
    $('admission-box').hidden = true;
    $('queue-choose').hidden = true;
    if (state?.admission) {
      state.admission = null;
      save();
    }
    onAdmitted(null);
  }

  /** Shows one QueueStatus from the stream (or GET /queue/me). */
  function render(s) {
    const progress = $('queue-progress');
    if (s.status !== 'admitted') notAdmitted();
    joinVisible(false);
    $('queue-ahead').textContent = s.ahead ?? '—';
    $('queue-wait').textContent = s.eta_seconds !== null && s.eta_seconds !== undefined ? roughly(s.eta_seconds) : '—';
    switch (s.status) {
      case 'waiting':
        if (s.waitlist) {
          setStatus('waiting', 'You are on the waiting list. If seats come back, you will be let in from here.');
        } else if (s.awaiting_lottery) {
          setStatus('waiting', `You're in the pre-queue. At ${when(details.onsale_at)} everyone here gets a random place in line.`);
          $('queue-ahead').textContent = 'drawn at the onsale';
        } else {
          setStatus('waiting', `You're in line: number ${s.position}. Don't close this tab — a reload keeps your place.`);
        }
        if (s.ahead !== null && s.ahead !== undefined) {
          state.firstAhead = Math.max(state.firstAhead ?? 0, s.ahead);
          save();
          progress.max = Math.max(1, state.firstAhead + 1);
          progress.value = state.firstAhead + 1 - s.ahead;
        } else {
          progress.removeAttribute('value');
        }
        break;
      case 'admitted':
        setStatus('admitted', 'It\'s your turn! Choose your seats before the countdown ends.');
        progress.max = 1;
        progress.value = 1;
        $('queue-ahead').textContent = '0';
        admitted(s);
        break;
      case 'spent':
        setStatus('spent', 'You have booked with your turn. Enjoy the show!');
        progress.max = 1;
        progress.value = 1;
        break;
      case 'lapsed':
        setStatus('lapsed', 'Your turn ended before you booked. Join again for a new place in line.');
        joinVisible(true, 'Join again');
        state.ticket = null;
        save();
        break;
      case 'left':
        setStatus('left', 'You left the queue.');
        joinVisible(true);
        break;
      case 'sold_out':
        if (s.waitlist) setStatus('sold_out', 'Sold out. You are on the waiting list: if seats come back, you will be let in.');
        else {
          setStatus('sold_out', 'Sold out — every seat is taken. Join the waiting list in case seats come back.');
          joinVisible(true, 'Join the waiting list');
          $('queue-join').dataset.action = 'waitlist';
        }
        break;
      default:
        setStatus(s.status, `Queue status: ${s.status}.`);
    }
    $('queue-note').textContent = s.sold_out && s.status !== 'sold_out' ? 'Every seat is now sold or held.' : '';
  }

  /**
   * Follows the fan's place. `after` is the position of a join just made: the server answers
   * once it has applied it, so a fan who just joined is never told they are not in the queue.
   */
  function listen(after) {
    stream?.close();
    if (!signedIn()) return;
    // No resume id on a fresh connection: the first status is the current one. (EventSource
    // sends Last-Event-ID itself when it reconnects.)
    const params = new URLSearchParams({ access_token: token() });
    const read = after ? `?${new URLSearchParams({ after })}` : '';
    if (after) params.set('after', after);
    stream = new EventSource(`/events/${eventId}/queue/me/stream?${params}`);
    stream.addEventListener('status', (e) => {
      render(JSON.parse(e.data));
    });
    stream.onerror = async () => {
      // The stream reconnects by itself; if we are not in the queue at all, stop and say so.
      try {
        render(await get(`/events/${eventId}/queue/me${read}`));
      } catch (err) {
        if (err.name === 'not-in-queue' || err.name === 'unauthorized') {
          stream?.close();
          state = null;
          keep(key, null);
          setStatus('none', 'Join the queue to get your place in line.');
          joinVisible(true);
        }
      }
    };
  }

  async function join() {
    if (!signedIn()) {
      showMessage('Please sign in (at the top of the page) to join the queue.', { problem: 'sign-in' });
      $('signin-name')?.focus();
      return;
    }
    const waitlist = $('queue-join').dataset.action === 'waitlist';
    state = { ...(state ?? {}), joinKey: state?.joinKey ?? newKey() };
    save();
    $('queue-join').disabled = true;
    try {
      const answer = await post(`/events/${eventId}/${waitlist ? 'waitlist' : 'queue/join'}`, {}, { headers: { 'Idempotency-Key': `${state.joinKey}${waitlist ? '-w' : ''}` }, onRetry: retryNotice });
      state.ticket = answer.ticket;
      state.joinKey = null; // the next join (after a lapse) is a new intent
      save();
      delete $('queue-join').dataset.action;
      joinVisible(false);
      setStatus(answer.status, 'You have a place. Finding where you are…');
      if (answer.admission_token) admitted({ ...answer, admission_token: answer.admission_token });
      listen(answer.position);
    } catch (e) {
      showProblem(e);
    } finally {
      $('queue-join').disabled = false;
    }
  }

  $('queue-panel').hidden = false;
  $('queue-join').addEventListener('click', join);
  $('queue-choose').addEventListener('click', () => {
    $('seat-map').scrollIntoView({ block: 'center' });
    $('seat-map').focus();
  });
  function start() {
    if (signedIn() && state?.ticket) {
      setStatus('waiting', 'Finding your place…');
      joinVisible(false);
      if (admission()) onAdmitted(state.admission);
      listen();
    } else {
      stream?.close();
      setStatus('none', new Date(details.onsale_at) > Date.now()
        ? `This onsale has a waiting room. Join before ${when(details.onsale_at)} and you get a random place in line at the onsale.`
        : 'This onsale has a waiting room. Join the queue to get your place in line.');
      joinVisible(true);
    }
  }
  onChange(() => {
    if (!signedIn()) {
      state = null;
      keep(key, null);
    }
    start();
  });
  start();
  return { admission };
}
