// The seat map: a canvas drawing of an event's compact availability map that stays fast from a
// club to a 200,000-seat stadium.
//
// - The layout (each seat's rectangle, in "seat units") is computed once per seat map into typed
//   arrays; a seat is found from its id through its row, never by scanning.
// - A full draw batches seats into one Path2D per look (tier colour, picked, held, booked), and
//   skips rows outside the view. When seats would be smaller than a few pixels the map draws
//   the overview instead: one bar per row, coloured by tier while the row has seats left.
// - A live change only marks its seats dirty; the next animation frame repaints those cells.
// - Hit testing goes through a uniform grid of section rectangles, then row and seat by arithmetic.
// - The canvas is scaled for devicePixelRatio.

import { money } from './format.js';

const PITCH = 1; // one seat cell, in world units
const SEAT = 0.8; // the seat inside its cell
const INSET = (PITCH - SEAT) / 2;
const GAP = 4; // between sections
const LABEL_PX = 18; // room above a section for its name, in CSS pixels at the overview's scale
const STAGE = 5; // the stage band above everything
const MIN_SEAT_PX = 2.4; // below this a seat is not drawn on its own

export const AVAILABLE = 0;
export const HELD = 1;
export const BOOKED = 2;
/** Kept out of the sale by the organizer: drawn like a booked seat, not for sale. */
export const WITHHELD = 3;
const LETTERS = ['A', 'H', 'B', 'W'];
const WORDS = ['available', 'held by someone', 'booked', 'not on sale'];
const FROM_LETTER = { A: AVAILABLE, H: HELD, B: BOOKED, W: WITHHELD };
const FROM_WORD = { available: AVAILABLE, held: HELD, booked: BOOKED, withheld: WITHHELD };

// Seat attributes (the availability map's per-row lists), one bit each per seat.
const ATTRIBUTES = [
  ['wheelchair', 1, 'wheelchair space'],
  ['companion', 2, 'companion seat'],
  ['restricted_view', 4, 'restricted view'],
  ['aisle', 8, 'aisle'],
];

// Okabe–Ito colours: told apart with the common colour-vision deficiencies. Held and booked are
// never told by colour alone: held is hollow and struck through, booked is solid grey.
export const TIER_COLOURS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#7F3C8D'];
const COLOUR = {
  canvas: '#ffffff',
  section: '#eef1f5',
  sectionSoldOut: '#dfe2e6',
  label: '#1f2933',
  labelMuted: '#52606d',
  stage: '#1f2933',
  stageText: '#ffffff',
  picked: '#111111',
  pickedCore: '#ffffff',
  heldFill: '#ffffff',
  heldLine: '#3e4c59',
  booked: '#7b8794',
  cursor: '#000000',
  soldRow: '#c5cbd3',
  mark: '#ffffff',
};

/** Everything about the map that does not change with availability. */
class Layout {
  constructor(availability, tierIndex, view) {
    const sections = availability.sections;
    let total = 0;
    let rowCount = 0;
    for (const s of sections) {
      rowCount += s.rows.length;
      for (const r of s.rows) total += r.seats.length;
    }
    this.total = total;
    this.status = new Uint8Array(total);
    this.attributes = new Uint8Array(total);
    this.seatRow = new Uint32Array(total);
    // Per row: first seat, seat count, x of seat 1, y, tier, price, section, seats left.
    this.rowStart = new Uint32Array(rowCount);
    this.rowLength = new Uint16Array(rowCount);
    this.rowX = new Float32Array(rowCount);
    this.rowY = new Float32Array(rowCount);
    this.rowTier = new Uint8Array(rowCount);
    this.rowPrice = new Float64Array(rowCount);
    this.rowSection = new Uint32Array(rowCount);
    this.rowLeft = new Uint32Array(rowCount);
    this.rowNames = new Array(rowCount);
    this.sections = [];
    this.sectionByCode = new Map();

    const widths = sections.map((s) => Math.max(1, ...s.rows.map((r) => r.seats.length)));
    // Shelves as wide as the canvas is wide for its height, so the overview fills it; the name
    // band above each section is LABEL_PX tall at the scale the overview will have.
    const aspect = Math.min(3, Math.max(0.5, view.w / view.h));
    const bare = sections.reduce((sum, s, i) => sum + (widths[i] + GAP) * (s.rows.length + GAP), 0);
    const LABEL = Math.max(1.2, LABEL_PX / Math.sqrt((view.w * view.h) / (bare * 1.15)));
    this.label = LABEL;
    // The stage band grows with the venue, up to STAGE.
    this.stage = Math.min(STAGE, Math.max(1.5, Math.sqrt(bare) * 0.06));
    const area = sections.reduce((sum, s, i) => sum + (widths[i] + GAP) * (s.rows.length + LABEL + GAP), 0);
    const shelfWidth = Math.max(Math.max(...widths), Math.sqrt(area * aspect));
    let x = 0;
    let y = this.stage + GAP;
    let shelfHeight = 0;
    let seat = 0;
    let row = 0;
    let width = 0;
    sections.forEach((s, si) => {
      const w = widths[si];
      const h = s.rows.length;
      if (x > 0 && x + w > shelfWidth) {
        x = 0;
        y += shelfHeight + GAP;
        shelfHeight = 0;
      }
      const section = {
        index: si, code: s.code, name: s.name, x, y: y + LABEL, w, h,
        firstRow: row, rows: new Map(), available: 0, total: 0, minPrice: Infinity, tiers: new Set(),
      };
      s.rows.forEach((r, ri) => {
        const n = r.seats.length;
        this.rowStart[row] = seat;
        this.rowLength[row] = n;
        this.rowX[row] = x + (w - n) / 2;
        this.rowY[row] = y + LABEL + ri;
        this.rowTier[row] = tierIndex.get(r.tier) ?? 0;
        this.rowPrice[row] = r.price;
        this.rowSection[row] = si;
        this.rowNames[row] = r.name;
        section.rows.set(r.name, row);
        section.total += n;
        section.minPrice = Math.min(section.minPrice, r.price);
        section.tiers.add(r.tier);
        let left = 0;
        for (let k = 0; k < n; k++) {
          const st = FROM_LETTER[r.seats[k]] ?? BOOKED;
          this.status[seat] = st;
          this.seatRow[seat] = row;
          if (st === AVAILABLE) left++;
          seat++;
        }
        for (const [name, bit] of ATTRIBUTES) {
          for (const number of r[name] ?? []) {
            if (number >= 1 && number <= n) this.attributes[seat - n + number - 1] |= bit;
          }
        }
        this.rowLeft[row] = left;
        section.available += left;
        row++;
      });
      this.sections.push(section);
      this.sectionByCode.set(s.code, section);
      x += w + GAP;
      width = Math.max(width, x - GAP);
      shelfHeight = Math.max(shelfHeight, h + LABEL);
    });
    this.width = Math.max(width, 10);
    this.height = y + shelfHeight;
    this.buildGrid();
  }

  /** A uniform grid of section rectangles, so a point finds its section without a scan. */
  buildGrid() {
    this.cell = Math.max(8, Math.sqrt((this.width * this.height) / Math.max(1, this.sections.length)));
    this.gridW = Math.ceil(this.width / this.cell) + 1;
    this.gridH = Math.ceil(this.height / this.cell) + 1;
    this.grid = Array.from({ length: this.gridW * this.gridH }, () => []);
    for (const s of this.sections) {
      const x0 = Math.floor(s.x / this.cell);
      const x1 = Math.floor((s.x + s.w) / this.cell);
      const y0 = Math.floor(s.y / this.cell);
      const y1 = Math.floor((s.y + s.h) / this.cell);
      for (let gy = y0; gy <= y1; gy++) for (let gx = x0; gx <= x1; gx++) this.grid[gy * this.gridW + gx].push(s);
    }
  }

  sectionAt(wx, wy) {
    const gx = Math.floor(wx / this.cell);
    const gy = Math.floor(wy / this.cell);
    if (gx < 0 || gy < 0 || gx >= this.gridW || gy >= this.gridH) return null;
    for (const s of this.grid[gy * this.gridW + gx]) {
      if (wx >= s.x && wx < s.x + s.w && wy >= s.y - this.label && wy < s.y + s.h) return s;
    }
    return null;
  }

  /** The seat whose cell holds the world point, or -1. */
  seatAt(wx, wy) {
    const s = this.sectionAt(wx, wy);
    if (!s) return -1;
    const ri = Math.floor(wy - s.y);
    if (ri < 0 || ri >= s.h) return -1;
    const row = s.firstRow + ri;
    const k = Math.floor(wx - this.rowX[row]);
    if (k < 0 || k >= this.rowLength[row]) return -1;
    return this.rowStart[row] + k;
  }

  /** The index of seat id "SECTION-ROW-NUMBER", or -1. */
  indexOf(seatId) {
    const last = seatId.lastIndexOf('-');
    const middle = seatId.lastIndexOf('-', last - 1);
    if (middle < 0) return -1;
    const s = this.sectionByCode.get(seatId.slice(0, middle));
    const row = s?.rows.get(seatId.slice(middle + 1, last));
    if (row === undefined) return -1;
    const n = Number(seatId.slice(last + 1));
    if (!Number.isInteger(n) || n < 1 || n > this.rowLength[row]) return -1;
    return this.rowStart[row] + n - 1;
  }

  idOf(i) {
    const row = this.seatRow[i];
    return `${this.sections[this.rowSection[row]].code}-${this.rowNames[row]}-${i - this.rowStart[row] + 1}`;
  }

  seatX(i) {
    const row = this.seatRow[i];
    return this.rowX[row] + (i - this.rowStart[row]);
  }

  seatY(i) {
    return this.rowY[this.seatRow[i]];
  }
}

/**
 * A live seat map on `canvas`. `tiers` is the seat map's tier list (code, name, price);
 * `onChange` is told when picks change; `describe` receives the words for the cursor seat
 * (again whenever they change: taken, released, held for the fan); `ours(id)` says whether a
 * held seat is held for this fan.
 */
export class SeatMap {
  constructor(canvas, { tiers, currency, maxSeats, onPick, onTaken, describe, onScope, ours }) {
    this.canvas = canvas;
    this.ctx = canvas.getContext('2d', { alpha: false });
    this.tiers = tiers;
    this.tierIndex = new Map(tiers.map((t, i) => [t.code, i]));
    this.currency = currency;
    this.maxSeats = maxSeats;
    /** A sentence saying why no seat can be picked (sales are closed), or null. */
    this.closed = null;
    this.onPick = onPick ?? (() => {});
    this.onTaken = onTaken ?? (() => {});
    this.describe = describe ?? (() => {});
    this.ours = ours ?? (() => false);
    this.saidSeat = -1; // the seat whose words were told last (-1: something else was)
    this.said = '';
    this.onScope = onScope ?? (() => {});
    this.picked = new Set();
    this.cursor = -1;
    this.scope = null; // null = overview, else the zoomed section
    this.scale = 1;
    this.tx = 0;
    this.ty = 0;
    this.dirty = new Uint32Array(1024);
    this.dirtyCount = 0;
    this.dirtyRows = new Set();
    this.frame = 0;
    this.fullDraw = false;
    this.paintMarks = [];
    this.bindInput();
    new ResizeObserver(() => this.resize()).observe(canvas.parentElement);
  }

  /** Builds the layout from an availability map and draws it. */
  load(availability) {
    const rect = this.canvas.parentElement.getBoundingClientRect();
    this.layout = new Layout(availability, this.tierIndex, { w: Math.max(100, rect.width), h: Math.max(100, rect.height) });
    this.picked.clear();
    this.dirtyCount = 0;
    this.dirtyRows.clear();
    if (this.scope) this.scope = this.layout.sectionByCode.get(this.scope.code) ?? null;
    this.cursor = this.layout.total > 0 ? 0 : -1;
    this.resize();
    this.onPick();
  }

  resize() {
    const rect = this.canvas.parentElement.getBoundingClientRect();
    this.cssW = Math.max(100, Math.floor(rect.width));
    this.cssH = Math.max(100, Math.floor(rect.height));
    this.dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(this.cssW * this.dpr);
    this.canvas.height = Math.round(this.cssH * this.dpr);
    this.canvas.style.width = `${this.cssW}px`;
    this.canvas.style.height = `${this.cssH}px`;
    if (this.layout) this.fit(this.scope);
  }

  /** Fits the whole map (`section` null) or one section into the canvas, and draws. */
  fit(section) {
    const L = this.layout;
    this.scope = section;
    const [x, y, w, h] = section
      ? [section.x - 1, section.y - L.label, section.w + 2, section.h + L.label + 1]
      : [-1, 0, L.width + 2, L.height + 1];
    this.scale = Math.min(this.cssW / w, this.cssH / h);
    if (section) this.scale = Math.min(this.scale, 40);
    this.tx = (this.cssW - w * this.scale) / 2 - x * this.scale;
    this.ty = (this.cssH - h * this.scale) / 2 - y * this.scale;
    this.onScope(section);
    this.draw();
  }

  /** Zooms by `factor` around the canvas centre (or the cursor seat when it is on screen). */
  zoom(factor) {
    const L = this.layout;
    let cx = this.cssW / 2;
    let cy = this.cssH / 2;
    if (this.cursor >= 0 && this.seatMode()) {
      cx = this.tx + (L.seatX(this.cursor) + PITCH / 2) * this.scale;
      cy = this.ty + (L.seatY(this.cursor) + PITCH / 2) * this.scale;
    }
    const next = Math.min(60, Math.max(this.minScale(), this.scale * factor));
    this.tx = cx - ((cx - this.tx) * next) / this.scale;
    this.ty = cy - ((cy - this.ty) * next) / this.scale;
    this.scale = next;
    this.draw();
  }

  minScale() {
    return Math.min(this.cssW / (this.layout.width + 2), this.cssH / (this.layout.height + 1)) * 0.5;
  }

  seatMode() {
    return this.scale * SEAT >= MIN_SEAT_PX;
  }

  /** Draws everything. */
  draw() {
    if (!this.layout) return;
    const { ctx, layout: L } = this;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.fillStyle = COLOUR.canvas;
    ctx.fillRect(0, 0, this.cssW, this.cssH);
    this.world();
    this.drawStage();
    for (const s of L.sections) if (this.visible(s.x, s.y - L.label, s.w, s.h + L.label)) this.drawSectionBack(s);
    if (this.seatMode()) this.drawSeats();
    else this.drawRows();
    for (const s of L.sections) if (this.visible(s.x, s.y - L.label, s.w, s.h + L.label)) this.drawLabel(s);
    this.drawCursor();
    this.dirtyCount = 0;
    this.dirtyRows.clear();
  }

  world() {
    const k = this.dpr * this.scale;
    this.ctx.setTransform(k, 0, 0, k, this.dpr * this.tx, this.dpr * this.ty);
  }

  visible(x, y, w, h) {
    const sx = this.tx + x * this.scale;
    const sy = this.ty + y * this.scale;
    return sx + w * this.scale >= 0 && sy + h * this.scale >= 0 && sx <= this.cssW && sy <= this.cssH;
  }

  drawStage() {
    const { ctx, layout: L } = this;
    ctx.fillStyle = COLOUR.stage;
    const w = Math.min(L.width, Math.max(20, L.width * 0.4));
    const x = (L.width - w) / 2;
    const h = L.stage - 0.5;
    ctx.fillRect(x, 0, w, h);
    this.text('STAGE', x + w / 2, h / 2, Math.min(h * 0.6, 14 / this.scale), COLOUR.stageText, 'center');
  }

  drawSectionBack(s) {
    this.ctx.fillStyle = s.available === 0 ? COLOUR.sectionSoldOut : COLOUR.section;
    this.ctx.fillRect(s.x - 0.5, s.y - 0.3, s.w + 1, s.h + 0.6);
  }

  drawLabel(s) {
    const { ctx } = this;
    const LABEL = this.layout.label;
    ctx.fillStyle = COLOUR.canvas;
    ctx.fillRect(s.x - 0.5, s.y - LABEL, s.w + 1, LABEL - 0.3);
    // Text is measured and drawn in CSS pixels: fonts of a few world units measure unreliably.
    const px = Math.min(13, LABEL * 0.7 * this.scale);
    if (px < 7) return;
    const room = (s.w + 0.8) * this.scale;
    const left = s.available === 0 ? 'sold out' : `${s.available.toLocaleString()} left`;
    ctx.save();
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.font = `600 ${px}px system-ui, sans-serif`;
    // The longest of these that fits the section's width.
    const words = [`${s.name} · ${left}`, `${s.code} · ${left}`, `${s.code} · ${s.available}`, s.code]
      .find((w) => ctx.measureText(w).width <= room) ?? '';
    const cx = this.tx + (s.x + s.w / 2) * this.scale;
    const cy = this.ty + (s.y - LABEL / 2 - 0.1) * this.scale;
    this.text(words, cx, cy, px, s.available === 0 ? COLOUR.labelMuted : COLOUR.label, 'center');
    ctx.restore();
  }

  text(words, x, y, size, colour, align) {
    if (!words) return;
    const { ctx } = this;
    ctx.fillStyle = colour;
    ctx.font = `600 ${size}px system-ui, sans-serif`;
    ctx.textAlign = align;
    ctx.textBaseline = 'middle';
    ctx.fillText(words, x, y);
  }

  /** Seats in view, batched by look. */
  drawSeats() {
    const L = this.layout;
    const paths = this.newPaths();
    const y0 = -this.ty / this.scale - 1;
    const y1 = (this.cssH - this.ty) / this.scale + 1;
    const x0 = -this.tx / this.scale - 1;
    const x1 = (this.cssW - this.tx) / this.scale + 1;
    for (const s of L.sections) {
      if (s.y + s.h < y0 || s.y > y1 || s.x + s.w < x0 || s.x > x1) continue;
      for (let row = s.firstRow; row < s.firstRow + s.h; row++) {
        const y = L.rowY[row];
        if (y + 1 < y0 || y > y1) continue;
        const start = L.rowStart[row];
        const n = L.rowLength[row];
        const rx = L.rowX[row];
        const k0 = Math.max(0, Math.floor(x0 - rx));
        const k1 = Math.min(n, Math.ceil(x1 - rx));
        for (let k = k0; k < k1; k++) this.addSeat(paths, start + k, rx + k, y, row);
      }
    }
    this.fillPaths(paths);
  }

  addSeat(paths, i, x, y, row) {
    const sx = x + INSET;
    const sy = y + INSET;
    if (this.picked.has(i)) {
      // A white tick on black: no attribute mark looks like it (a companion seat is a square).
      paths.picked.rect(sx, sy, SEAT, SEAT);
      this.tick(paths.core, sx, sy);
      return;
    }
    switch (this.layout.status[i]) {
      case AVAILABLE:
        paths.tier[this.layout.rowTier[row]].rect(sx, sy, SEAT, SEAT);
        break;
      case HELD:
        if (this.ours(this.layout.idOf(i))) {
          // Held for this fan: the pick's tick, in black on white inside a heavy black frame.
          paths.mine.rect(sx + 0.06, sy + 0.06, SEAT - 0.12, SEAT - 0.12);
          this.tick(paths.mineTick, sx, sy);
          break;
        }
        paths.held.rect(sx + 0.06, sy + 0.06, SEAT - 0.12, SEAT - 0.12);
        paths.slash.moveTo(sx + 0.06, sy + SEAT - 0.06);
        paths.slash.lineTo(sx + SEAT - 0.06, sy + 0.06);
        break;
      default:
        paths.booked.rect(sx, sy, SEAT, SEAT);
    }
    // Attribute marks, in white on any seat: a disc (wheelchair), a square (companion), a
    // corner (restricted view), a bar along the front (aisle).
    const a = this.layout.attributes[i];
    if (a & 1) {
      paths.marks.moveTo(sx + SEAT * 0.76, sy + SEAT / 2);
      paths.marks.arc(sx + SEAT / 2, sy + SEAT / 2, SEAT * 0.26, 0, 2 * Math.PI);
    }
    if (a & 2) paths.marks.rect(sx + SEAT * 0.32, sy + SEAT * 0.32, SEAT * 0.36, SEAT * 0.36);
    if (a & 4) {
      paths.marks.moveTo(sx + SEAT * 0.55, sy);
      paths.marks.lineTo(sx + SEAT, sy);
      paths.marks.lineTo(sx + SEAT, sy + SEAT * 0.45);
      paths.marks.closePath();
    }
    if (a & 8) paths.marks.rect(sx, sy + SEAT * 0.84, SEAT, SEAT * 0.16);
  }

  /** The tick of a picked seat (and of one held for the fan) at `sx, sy`, added to `path`. */
  tick(path, sx, sy) {
    path.moveTo(sx + SEAT * 0.22, sy + SEAT * 0.52);
    path.lineTo(sx + SEAT * 0.42, sy + SEAT * 0.72);
    path.lineTo(sx + SEAT * 0.78, sy + SEAT * 0.3);
  }

  fillPaths(paths) {
    const { ctx } = this;
    paths.tier.forEach((p, t) => {
      ctx.fillStyle = TIER_COLOURS[t % TIER_COLOURS.length];
      ctx.fill(p);
    });
    ctx.fillStyle = COLOUR.booked;
    ctx.fill(paths.booked);
    ctx.fillStyle = COLOUR.heldFill;
    ctx.fill(paths.held);
    ctx.strokeStyle = COLOUR.heldLine;
    ctx.lineWidth = Math.max(0.1, 1.2 / this.scale);
    ctx.stroke(paths.held);
    ctx.stroke(paths.slash);
    ctx.fill(paths.mine);
    ctx.strokeStyle = COLOUR.picked;
    ctx.lineWidth = SEAT * 0.12;
    ctx.stroke(paths.mine);
    ctx.fillStyle = COLOUR.picked;
    ctx.fill(paths.picked);
    ctx.strokeStyle = COLOUR.pickedCore;
    ctx.lineWidth = SEAT * 0.16;
    ctx.lineCap = 'round';
    ctx.lineJoin = 'round';
    ctx.stroke(paths.core);
    ctx.strokeStyle = COLOUR.picked;
    ctx.stroke(paths.mineTick);
    ctx.lineCap = 'butt';
    ctx.lineJoin = 'miter';
    ctx.fillStyle = COLOUR.mark;
    ctx.fill(paths.marks);
  }

  /** The overview: one bar per row, in its tier's colour while it has seats left. */
  drawRows() {
    const L = this.layout;
    const paths = this.tiers.map(() => new Path2D());
    const sold = new Path2D();
    for (let row = 0; row < L.rowLength.length; row++) {
      const target = L.rowLeft[row] > 0 ? paths[L.rowTier[row]] : sold;
      target.rect(L.rowX[row], L.rowY[row] + 0.15, L.rowLength[row], 0.7);
    }
    paths.forEach((p, t) => {
      this.ctx.fillStyle = TIER_COLOURS[t % TIER_COLOURS.length];
      this.ctx.fill(p);
    });
    this.ctx.fillStyle = COLOUR.soldRow;
    this.ctx.fill(sold);
  }

  drawCursor() {
    if (this.cursor < 0 || document.activeElement !== this.canvas) return;
    const L = this.layout;
    const { ctx } = this;
    ctx.strokeStyle = COLOUR.cursor;
    ctx.lineWidth = Math.max(0.08, 2 / this.scale);
    if (this.seatMode()) {
      ctx.strokeRect(L.seatX(this.cursor) + 0.04, L.seatY(this.cursor) + 0.04, PITCH - 0.08, PITCH - 0.08);
    } else {
      const s = L.sections[L.rowSection[L.seatRow[this.cursor]]];
      ctx.strokeRect(s.x - 0.4, s.y - 0.2, s.w + 0.8, s.h + 0.4);
    }
  }

  /** Repaints the cells of `count` seats from `seats` (after changes), in seat mode: their
   * backgrounds, then one batch per look, then the cursor. */
  paintSeats(seats, count) {
    const L = this.layout;
    const paths = this.newPaths();
    let cursor = false;
    for (let d = 0; d < count; d++) {
      const i = seats[d];
      const row = L.seatRow[i];
      const x = L.seatX(i);
      const y = L.rowY[row];
      if (!this.visible(x, y, PITCH, PITCH)) continue;
      const s = L.sections[L.rowSection[row]];
      this.ctx.fillStyle = s.available === 0 ? COLOUR.sectionSoldOut : COLOUR.section;
      this.ctx.fillRect(x, y, PITCH, PITCH);
      this.addSeat(paths, i, x, y, row);
      cursor ||= i === this.cursor;
    }
    this.fillPaths(paths);
    if (cursor) this.drawCursor();
  }

  paintSeat(i) {
    this.paintSeats([i], 1);
  }

  newPaths() {
    return {
      tier: this.tiers.map(() => new Path2D()), picked: new Path2D(), core: new Path2D(), held: new Path2D(),
      slash: new Path2D(), booked: new Path2D(), marks: new Path2D(), mine: new Path2D(), mineTick: new Path2D(),
    };
  }

  /** Marks seat `i` for the next frame. */
  markDirty(i) {
    if (this.dirtyCount === this.dirty.length) {
      const bigger = new Uint32Array(this.dirty.length * 2);
      bigger.set(this.dirty);
      this.dirty = bigger;
    }
    this.dirty[this.dirtyCount++] = i;
    this.dirtyRows.add(this.layout.seatRow[i]);
    this.schedule();
  }

  schedule() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.paintDirty());
  }

  /** Next frame: repaint what changed, then set the marks of the changes it shows. */
  paintDirty() {
    this.frame = 0;
    const L = this.layout;
    if (this.fullDraw) {
      this.fullDraw = false;
      this.draw();
    } else if (this.seatMode()) {
      this.world();
      const sections = new Set();
      for (const row of this.dirtyRows) sections.add(L.rowSection[row]);
      for (const si of sections) {
        const s = L.sections[si];
        if (this.visible(s.x, s.y - L.label, s.w, L.label)) this.drawLabel(s);
      }
      this.paintSeats(this.dirty, this.dirtyCount);
    } else {
      this.world();
      const sections = new Set();
      for (const row of this.dirtyRows) sections.add(L.rowSection[row]);
      for (const si of sections) {
        const s = L.sections[si];
        this.drawSectionBack(s);
        for (let row = s.firstRow; row < s.firstRow + s.h; row++) this.dirtyRows.add(row);
        this.drawLabel(s);
      }
      const paths = this.tiers.map(() => new Path2D());
      const sold = new Path2D();
      for (const row of this.dirtyRows) {
        (L.rowLeft[row] > 0 ? paths[L.rowTier[row]] : sold).rect(L.rowX[row], L.rowY[row] + 0.15, L.rowLength[row], 0.7);
      }
      paths.forEach((p, t) => {
        this.ctx.fillStyle = TIER_COLOURS[t % TIER_COLOURS.length];
        this.ctx.fill(p);
      });
      this.ctx.fillStyle = COLOUR.soldRow;
      this.ctx.fill(sold);
      this.drawCursor();
    }
    this.dirtyCount = 0;
    this.dirtyRows.clear();
    this.retell();
    for (const { mark, position } of this.paintMarks) performance.mark(mark, { detail: { position } });
    this.paintMarks.length = 0;
  }

  /**
   * A live change: `seatIds` now have `status` ("available" | "held" | "booked"). Returns the
   * ids among the fan's picks that someone else just took. `mark` is set once painted, with
   * `position` (the delta's log position) as its detail.
   */
  apply(seatIds, status, mark, position) {
    const L = this.layout;
    const st = FROM_WORD[status];
    const taken = [];
    if (st === undefined || !L) return taken;
    for (const id of seatIds) {
      const i = L.indexOf(id);
      if (i < 0) continue;
      const before = L.status[i];
      if (before === st) continue;
      L.status[i] = st;
      const row = L.seatRow[i];
      const s = L.sections[L.rowSection[row]];
      if (before === AVAILABLE) {
        L.rowLeft[row]--;
        s.available--;
      } else if (st === AVAILABLE) {
        L.rowLeft[row]++;
        s.available++;
      }
      if (st !== AVAILABLE && this.picked.delete(i)) taken.push(id);
      // A section that just sold out or came back changes its background: draw it all.
      if (s.available === 0 || (st === AVAILABLE && s.available === 1)) this.fullDraw = true;
      this.markDirty(i);
    }
    if (mark) {
      this.paintMarks.push({ mark, position });
      this.schedule();
    }
    if (taken.length) {
      this.onTaken(taken);
      this.onPick();
    }
    return taken;
  }

  /** Toggles seat `i`; answers a sentence when it cannot be picked, else null. */
  toggle(i) {
    const L = this.layout;
    if (this.picked.has(i)) {
      this.picked.delete(i);
    } else if (this.closed) {
      return this.closed;
    } else if (L.status[i] !== AVAILABLE) {
      return `${this.words(i)} — please pick another seat.`;
    } else if (this.picked.size >= this.maxSeats) {
      return `You can pick up to ${this.maxSeats} seats in one order.`;
    } else {
      this.picked.add(i);
    }
    this.markDirty(i);
    this.onPick();
    return null;
  }

  /** Repaints `seatIds`, whose look depends on the page (the fan's hold began or ended). */
  refresh(seatIds) {
    const L = this.layout;
    if (!L) return;
    for (const id of seatIds) {
      const i = L.indexOf(id);
      if (i >= 0) this.markDirty(i);
    }
  }

  clearPicks() {
    for (const i of this.picked) this.markDirty(i);
    this.picked.clear();
    this.onPick();
  }

  /** The fan's picks, as `{id, price, tier}` in map order. */
  picks() {
    const L = this.layout;
    return [...this.picked].sort((a, b) => a - b).map((i) => {
      const row = L.seatRow[i];
      return { id: L.idOf(i), price: L.rowPrice[row], tier: this.tiers[L.rowTier[row]] };
    });
  }

  /** Words for seat `i`: "Section 101, row C, seat 7, Standard €89.00, available". */
  words(i) {
    const L = this.layout;
    const row = L.seatRow[i];
    const s = L.sections[L.rowSection[row]];
    const tier = this.tiers[L.rowTier[row]];
    const held = L.status[i] === HELD && this.ours(L.idOf(i));
    const state = this.picked.has(i) ? 'your pick' : held ? 'held for you' : WORDS[L.status[i]];
    const marks = ATTRIBUTES.filter(([, bit]) => L.attributes[i] & bit).map(([, , word]) => `, ${word}`).join('');
    return `Section ${s.name}, row ${L.rowNames[row]}, seat ${i - L.rowStart[row] + 1}${marks}, ${tier?.name ?? ''} ${money(L.rowPrice[row], this.currency)}, ${state}`;
  }

  /** Tells seat `i`'s words and remembers them, so that a later change to the seat is told too. */
  sayWords(i) {
    this.saidSeat = i;
    this.said = this.words(i);
    this.describe(this.said);
  }

  /** Tells something other than a seat's words (`alert`: a refusal to show as a message). */
  say(words, alert = false) {
    this.saidSeat = -1;
    this.describe(words, alert);
  }

  /** The told seat's words again if they no longer hold (after a repaint of changes). */
  retell() {
    const i = this.saidSeat;
    if (i < 0 || i >= this.layout.total || i !== this.cursor || !this.seatMode()) return;
    if (this.words(i) !== this.said) this.sayWords(i);
  }

  /** Moves the keyboard cursor to seat `i`, bringing it into view. */
  moveCursor(i) {
    const L = this.layout;
    if (i < 0 || i >= L.total) return;
    const before = this.cursor;
    this.cursor = i;
    const s = L.sections[L.rowSection[L.seatRow[i]]];
    const inView = this.seatMode() && this.visible(L.seatX(i), L.seatY(i), PITCH, PITCH);
    if (!inView && this.seatMode()) {
      this.fit(s);
    } else if (before >= 0 && this.seatMode()) {
      this.world();
      this.paintSeat(before);
      this.paintSeat(i);
    } else {
      this.draw();
    }
    if (this.seatMode()) this.sayWords(i);
    else this.say(`Section ${s.name}: ${s.available} of ${s.total} seats left. Press Enter to zoom in.`);
  }

  /** The seat in the row in front (-1) or behind (+1), nearest in position. */
  neighbourRow(i, step) {
    const L = this.layout;
    const row = L.seatRow[i];
    const s = L.sections[L.rowSection[row]];
    const next = row + step;
    if (next < s.firstRow || next >= s.firstRow + s.h) {
      const other = L.sections[s.index + step];
      if (!other) return i;
      const target = step > 0 ? other.firstRow : other.firstRow + other.h - 1;
      return L.rowStart[target];
    }
    const x = L.seatX(i);
    const k = Math.min(L.rowLength[next] - 1, Math.max(0, Math.round(x - L.rowX[next])));
    return L.rowStart[next] + k;
  }

  bindInput() {
    const c = this.canvas;
    c.addEventListener('click', (e) => this.click(e));
    c.addEventListener('keydown', (e) => this.key(e));
    // A pointer press focuses the canvas too: the click then places the cursor, so focusing
    // must not move the view.
    c.addEventListener('pointerdown', () => { this.pointing = true; });
    c.addEventListener('focus', () => {
      if (this.pointing || this.cursor < 0) return;
      const L = this.layout;
      const seatInView = this.seatMode() && this.visible(L.seatX(this.cursor), L.seatY(this.cursor), PITCH, PITCH);
      if (!seatInView && this.scope) this.cursor = L.rowStart[this.scope.firstRow];
      this.moveCursor(this.cursor);
    });
    c.addEventListener('blur', () => this.draw());
    c.addEventListener('wheel', (e) => {
      if (!e.ctrlKey && !e.metaKey) return;
      e.preventDefault();
      this.zoom(e.deltaY < 0 ? 1.25 : 0.8);
    }, { passive: false });
  }

  click(e) {
    this.pointing = false;
    if (!this.layout) return;
    const rect = this.canvas.getBoundingClientRect();
    const wx = (e.clientX - rect.left - this.tx) / this.scale;
    const wy = (e.clientY - rect.top - this.ty) / this.scale;
    if (!this.seatMode()) {
      const s = this.layout.sectionAt(wx, wy);
      if (s) this.fit(s);
      return;
    }
    const i = this.layout.seatAt(wx, wy);
    if (i < 0) return;
    this.cursor = i;
    const problem = this.toggle(i);
    if (problem) this.say(problem, true);
    else this.sayWords(i);
  }

  key(e) {
    if (!this.layout || this.cursor < 0) return;
    const L = this.layout;
    const i = this.cursor;
    const row = L.seatRow[i];
    const overview = !this.seatMode();
    const sectionOf = (j) => L.sections[L.rowSection[L.seatRow[j]]];
    const firstOf = (s) => L.rowStart[s.firstRow];
    let handled = true;
    switch (e.key) {
      case 'ArrowRight':
        if (overview) this.moveCursor(firstOf(L.sections[Math.min(L.sections.length - 1, sectionOf(i).index + 1)]));
        else this.moveCursor(Math.min(L.total - 1, i + 1));
        break;
      case 'ArrowLeft':
        if (overview) this.moveCursor(firstOf(L.sections[Math.max(0, sectionOf(i).index - 1)]));
        else this.moveCursor(Math.max(0, i - 1));
        break;
      case 'ArrowDown':
        this.moveCursor(overview ? firstOf(L.sections[Math.min(L.sections.length - 1, sectionOf(i).index + 1)]) : this.neighbourRow(i, 1));
        break;
      case 'ArrowUp':
        this.moveCursor(overview ? firstOf(L.sections[Math.max(0, sectionOf(i).index - 1)]) : this.neighbourRow(i, -1));
        break;
      case 'Home':
        this.moveCursor(L.rowStart[row]);
        break;
      case 'End':
        this.moveCursor(L.rowStart[row] + L.rowLength[row] - 1);
        break;
      case 'Enter':
      case ' ':
        if (overview) {
          this.fit(sectionOf(i));
          this.moveCursor(i);
        } else {
          const problem = this.toggle(i);
          if (problem) this.say(problem, true);
          else this.sayWords(i);
        }
        break;
      case '+':
      case '=':
        this.zoom(1.5);
        this.moveCursor(i);
        break;
      case '-':
      case '_':
        this.zoom(1 / 1.5);
        this.moveCursor(i);
        break;
      case 'Escape':
        this.fit(null);
        this.moveCursor(i);
        break;
      default:
        handled = false;
    }
    if (handled) e.preventDefault();
  }

  // ---- What tests and other modules ask (real code paths, no shortcuts) ----

  statusOf(seatId) {
    const i = this.layout?.indexOf(seatId) ?? -1;
    return i < 0 ? null : LETTERS[this.layout.status[i]];
  }

  /** The words the map says for a seat (as the keyboard cursor announces them). */
  wordsOf(seatId) {
    const i = this.layout?.indexOf(seatId) ?? -1;
    return i < 0 ? null : this.words(i);
  }

  isPicked(seatId) {
    const i = this.layout?.indexOf(seatId) ?? -1;
    return i >= 0 && this.picked.has(i);
  }

  /** The viewport CSS position of a seat's centre, zooming into its section first if needed. */
  seatCenter(seatId) {
    const L = this.layout;
    const i = L?.indexOf(seatId) ?? -1;
    if (i < 0) return null;
    const x = L.seatX(i) + PITCH / 2;
    const y = L.seatY(i) + PITCH / 2;
    // Seats smaller than a fingertip's worth of pixels are zoomed into first.
    if (this.scale * SEAT < 8 || !this.visible(x - 0.5, y - 0.5, 1, 1)) this.fit(L.sections[L.rowSection[L.seatRow[i]]]);
    const at = () => {
      const rect = this.canvas.getBoundingClientRect();
      return { x: rect.left + this.tx + x * this.scale, y: rect.top + this.ty + y * this.scale };
    };
    let point = at();
    if (point.y < 0 || point.y > window.innerHeight || point.x < 0 || point.x > window.innerWidth) {
      this.canvas.scrollIntoView({ block: 'center', inline: 'nearest' });
      point = at();
    }
    const onScreen = point.x >= 0 && point.y >= 0 && point.x <= window.innerWidth && point.y <= window.innerHeight;
    return onScreen && this.seatMode() ? point : null;
  }

  sectionByCode(code) {
    return this.layout?.sectionByCode.get(code) ?? null;
  }

  sectionList() {
    return this.layout?.sections ?? [];
  }
}
