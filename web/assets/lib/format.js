// Formatting shared by every page: money, dates, countdowns, and small DOM helpers.

const moneyFormats = new Map();

/** Minor units of `currency` as a price, e.g. 8900, "EUR" → "€89.00". */
export function money(minor, currency = 'EUR') {
  let format = moneyFormats.get(currency);
  if (!format) {
    format = new Intl.NumberFormat(undefined, { style: 'currency', currency });
    moneyFormats.set(currency, format);
  }
  return format.format(minor / 100);
}

const dateFormat = new Intl.DateTimeFormat(undefined, {
  weekday: 'short', day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit',
});

/** An RFC 3339 instant as a local date and time. */
export function when(iso) {
  return dateFormat.format(new Date(iso));
}

/** Seconds as "mm:ss" (hours fold into minutes); never negative. */
export function mmss(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** Seconds as words: "about 3 minutes", "under a minute". */
export function roughly(seconds) {
  if (seconds < 60) return 'under a minute';
  const minutes = Math.round(seconds / 60);
  if (minutes < 90) return `about ${minutes} minute${minutes === 1 ? '' : 's'}`;
  return `about ${Math.round(minutes / 60)} hours`;
}

/** A seat id "101-C-7" as words; `sectionNames` (a Map of code to name) names its section as the map does. */
export function seatName(seatId, sectionNames) {
  const [code, row, number] = splitSeat(seatId);
  const section = sectionNames?.get(code) ?? code;
  // A standing zone's places are `ZONE-GA-N` (see the README's general admission).
  if (row === 'GA') return `${section} standing, place ${number}`;
  return `Section ${section}, row ${row}, seat ${number}`;
}

/** "SECTION-ROW-NUMBER" → [section, row, number]; section codes and rows may not hold dashes. */
export function splitSeat(seatId) {
  const last = seatId.lastIndexOf('-');
  const middle = seatId.lastIndexOf('-', last - 1);
  return [seatId.slice(0, middle), seatId.slice(middle + 1, last), Number(seatId.slice(last + 1))];
}

/** document.createElement with properties, attributes (`data-*`, `aria-*`) and children. */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('data-') || key.startsWith('aria-') || key === 'role' || key === 'for') {
      node.setAttribute(key, value === true ? '' : String(value));
    } else {
      node[key] = value;
    }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** A random idempotency key (one per intended command, reused on retry). */
export function newKey() {
  return crypto.randomUUID();
}
