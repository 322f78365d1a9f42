// The event page's standing (general admission) zones: one block per zone with its free places
// and a count picker that holds that many places. The availability map gives each zone's counts
// (`standing`), and the seat stream's `zone` events replace them as places move.

import { el, money } from '../lib/format.js';

const $ = (id) => document.getElementById(id);

/** Zones of one event; `reserve(body)` is the checkout's, shared with seats. */
export function createZones({ details, reserve }) {
  const counts = new Map(); // zone code → the latest ZoneAvailability

  function block(zone) {
    const count = el('input', { type: 'number', className: 'zone-count', min: '1', inputMode: 'numeric', 'aria-label': `Places in ${zone.name}` });
    const hold = el('button', { type: 'submit', className: 'zone-hold' }, 'Hold places');
    const form = el('form', { className: 'zone', 'data-zone': zone.code },
      el('span', { className: 'zone-name' }, zone.name),
      el('span', { className: 'zone-available' }, ''),
      el('span', { className: 'zone-price' }, `${money(zone.standing.price, details.currency)} each, standing`),
      el('span', { className: 'zone-pick' }, count, hold));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      reserve({ zone: zone.code, count: Number(count.value) });
    });
    return form;
  }

  function paint(code) {
    const z = counts.get(code);
    const form = $('zones').querySelector(`[data-zone="${CSS.escape(code)}"]`);
    if (!z || !form) return;
    const most = Math.min(z.available, details.max_seats_per_order);
    form.querySelector('.zone-available').textContent = z.available === 0 ? 'Sold out' : `${z.available.toLocaleString()} of ${z.capacity.toLocaleString()} places left`;
    form.querySelector('.zone-available').dataset.available = String(z.available);
    const count = form.querySelector('.zone-count');
    count.max = String(Math.max(1, most));
    if (!count.value || Number(count.value) > most) count.value = String(Math.max(1, Math.min(2, most)));
    count.disabled = z.available === 0;
    form.querySelector('.zone-hold').disabled = z.available === 0;
    form.classList.toggle('sold-out', z.available === 0);
  }

  /** The zones of an availability map (its sections with `standing`). */
  function load(availability) {
    const zones = availability.sections.filter((s) => s.standing);
    counts.clear();
    for (const z of zones) counts.set(z.code, z.standing);
    $('zones-panel').hidden = zones.length === 0;
    $('zones').replaceChildren(...zones.map(block));
    for (const z of zones) paint(z.code);
  }

  /** A `zone` event of the seat stream: the zone's counts now. */
  function update(zone) {
    counts.set(zone.zone, zone);
    paint(zone.zone);
  }

  return { load, update, counts: (code) => counts.get(code) ?? null };
}

/** The seated part of an availability map, for the canvas. */
export function seated(availability) {
  return { ...availability, sections: availability.sections.filter((s) => !s.standing) };
}
