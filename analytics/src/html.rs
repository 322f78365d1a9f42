//! The report for people: one self-contained HTML file with inline SVG charts.
//!
//! Everything is drawn here as plain SVG elements; the file references no script, stylesheet,
//! font or image, so it opens the same with no network. Per event: the sales curve (seats sold
//! over time), the holds/bookings/expiries stack per time bucket, the seat map coloured by the
//! second each seat sold, and, once the waiting room records its facts, the queue wait
//! distribution.

use std::fmt::Write;

use frontrow_schema::seatmap::RowSpan;

use crate::figures::{EventReport, QueueFigures};
use crate::report::Report;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 240.0;
const PAD: f64 = 44.0;
/// Room above the plot for the legend.
const TOP: f64 = 30.0;
/// At most this many bars in the stack chart: seconds are bucketed to fit.
const MAX_BARS: i64 = 120;

/// Escapes text for HTML and SVG.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The whole report page.
pub fn render(report: &Report) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>FrontRow onsale report</title>\n<style>\n");
    h.push_str("body{font-family:sans-serif;margin:2em;color:#222;max-width:64em}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}th{background:#eee}td:first-child,th:first-child{text-align:left}svg{display:block;margin:0.5em 0 1.5em}.note{color:#666;font-size:90%}\n");
    h.push_str("</style></head><body>\n<h1>FrontRow onsale report</h1>\n");
    let _ = writeln!(
        h,
        "<p class=\"note\">Generated {} from {} records ({} of the events reported) in {:.2}s.</p>",
        report.generated_at.to_rfc3339(),
        report.coverage.records_read,
        report.coverage.records_decoded,
        report.replay_seconds
    );
    for note in &report.notes {
        let _ = writeln!(h, "<p class=\"note\">Note: {}</p>", esc(note));
    }
    if report.events.is_empty() {
        h.push_str("<p>No event in the log (or the range).</p>\n");
    }
    for event in &report.events {
        event_section(&mut h, event);
    }
    h.push_str("</body></html>\n");
    h
}

fn event_section(h: &mut String, e: &EventReport) {
    let _ = writeln!(
        h,
        "<h2>{} &mdash; {}</h2>\n<p>{} &middot; event <code>{}</code> &middot; on sale {}</p>",
        esc(&e.title),
        esc(&e.artist),
        esc(&e.venue),
        e.event_id,
        e.onsale_at.to_rfc3339()
    );
    let t = &e.totals;
    let _ = writeln!(
        h,
        "<table><tr><th>seats</th><th>booked now</th><th>held now</th><th>reservations</th><th>bookings</th><th>expired</th><th>released</th><th>payment failed</th><th>refunded</th></tr>\
         <tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr></table>",
        e.seats_total,
        e.seats_booked_now,
        e.seats_held_now,
        t.reservations,
        t.bookings,
        t.expired,
        t.released,
        t.payment_failed,
        t.refunded
    );
    let sell_out = match &e.time_to_sell_out {
        Some(s) => format!(
            "sold out at {} ({:.1}s after the onsale opened)",
            s.sold_out_at.to_rfc3339(),
            s.from_onsale_seconds
        ),
        None => "not sold out".to_owned(),
    };
    let c = &e.conversion;
    let _ = writeln!(
        h,
        "<p>{}; hold-to-booking conversion {}; median time to pay {}.</p>",
        sell_out,
        c.rate.map_or("n/a".to_owned(), |r| format!("{:.1}%", r * 100.0)),
        c.median_time_to_pay_seconds
            .map_or("n/a".to_owned(), |s| format!("{s:.1}s"))
    );
    h.push_str("<h3>Sales curve</h3>\n");
    sales_curve(h, e);
    h.push_str("<h3>Holds, bookings and expiries</h3>\n");
    stack_chart(h, e);
    if let Some(queue) = &e.queue {
        h.push_str("<h3>Queue waits</h3>\n");
        queue_chart(h, queue);
    }
    h.push_str("<h3>Seat map by the second each seat sold</h3>\n");
    seat_map(h, e);
    let r = &e.revenue;
    let _ = writeln!(
        h,
        "<h3>Revenue ({})</h3>\n<table><tr><th>section</th><th>tier</th><th>seats booked</th><th>gross</th><th>seats refunded</th><th>refunded</th><th>net</th></tr>",
        esc(&r.currency)
    );
    for l in &r.lines {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&l.section),
            esc(&l.tier),
            l.seats_booked,
            money(l.gross),
            l.seats_refunded,
            money(l.refunded),
            money(l.net)
        );
    }
    let _ = writeln!(
        h,
        "<tr><th>total</th><th></th><th></th><th>{}</th><th></th><th>{}</th><th>{}</th></tr></table>",
        money(r.gross),
        money(r.refunded),
        money(r.net)
    );
    if !e.most_held_never_bought.is_empty() {
        h.push_str("<h3>Seats most often held but never bought</h3>\n<table><tr><th>seat</th><th>holds</th></tr>");
        for s in &e.most_held_never_bought {
            let _ = write!(h, "<tr><td>{}</td><td>{}</td></tr>", esc(&s.seat), s.holds);
        }
        h.push_str("</table>\n");
    }
}

fn money(minor: i64) -> String {
    format!("{}.{:02}", minor / 100, (minor % 100).abs())
}

fn svg_open(h: &mut String, id: &str, height: f64, label: &str) {
    let _ = writeln!(
        h,
        "<svg id=\"{id}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" role=\"img\" aria-label=\"{}\" font-family=\"sans-serif\" font-size=\"11\">",
        esc(label)
    );
}

fn axes(h: &mut String, x_label: &str, y_max: u64) {
    let (x0, y0, x1, y1) = (PAD, HEIGHT - PAD, WIDTH - 10.0, TOP);
    let _ = writeln!(
        h,
        "<line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y0}\" stroke=\"#444\"/><line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x0}\" y2=\"{y1}\" stroke=\"#444\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{y_max}</text><text x=\"{}\" y=\"{y0}\" text-anchor=\"end\">0</text>",
        (x0 + x1) / 2.0,
        HEIGHT - 8.0,
        esc(x_label),
        x0 - 4.0,
        y1 + 10.0,
        x0 - 4.0
    );
}

/// Seats sold over time: the running total at the end of each second with activity.
fn sales_curve(h: &mut String, e: &EventReport) {
    svg_open(h, &format!("sales-{}", e.event_id), HEIGHT, "sales curve");
    let (Some(first), Some(last)) = (e.per_second.first(), e.per_second.last()) else {
        h.push_str("<text x=\"20\" y=\"40\">no activity</text></svg>\n");
        return;
    };
    let t0 = first.second.timestamp();
    let span = (last.second.timestamp() - t0).max(1) as f64;
    let y_max = e.seats_total.max(1);
    axes(h, &format!("seconds since {}", first.second.format("%H:%M:%S")), y_max);
    let x = |s: i64| PAD + (s - t0) as f64 / span * (WIDTH - 10.0 - PAD);
    let y = |v: u64| (HEIGHT - PAD) - v as f64 / y_max as f64 * (HEIGHT - PAD - TOP);
    let mut points = String::new();
    let mut previous = 0;
    for s in &e.per_second {
        let t = s.second.timestamp();
        // A step: the total holds until the next second with activity.
        let _ = write!(points, "{:.1},{:.1} ", x(t), y(previous));
        let _ = write!(points, "{:.1},{:.1} ", x(t), y(s.seats_sold_total));
        previous = s.seats_sold_total;
    }
    let _ = writeln!(
        h,
        "<polyline fill=\"none\" stroke=\"#1f6feb\" stroke-width=\"2\" points=\"{}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.0}s</text></svg>",
        points.trim_end(),
        WIDTH - 10.0,
        HEIGHT - PAD + 14.0,
        span
    );
}

/// Holds, bookings, expiries and other releases per time bucket, stacked.
fn stack_chart(h: &mut String, e: &EventReport) {
    svg_open(
        h,
        &format!("stack-{}", e.event_id),
        HEIGHT,
        "holds, bookings and expiries",
    );
    let (Some(first), Some(last)) = (e.per_second.first(), e.per_second.last()) else {
        h.push_str("<text x=\"20\" y=\"40\">no activity</text></svg>\n");
        return;
    };
    let t0 = first.second.timestamp();
    let seconds = last.second.timestamp() - t0 + 1;
    let width = (seconds + MAX_BARS - 1) / MAX_BARS;
    let bars = (seconds + width - 1) / width;
    // holds, bookings, expiries, other releases
    let mut buckets = vec![[0u64; 4]; bars as usize];
    for s in &e.per_second {
        let b = &mut buckets[((s.second.timestamp() - t0) / width) as usize];
        let c = &s.counts;
        b[0] += c.reservations;
        b[1] += c.bookings;
        b[2] += c.expired;
        b[3] += c.released + c.payment_failed + c.refunded;
    }
    let y_max = buckets.iter().map(|b| b.iter().sum::<u64>()).max().unwrap_or(1).max(1);
    axes(
        h,
        &format!("{width}s buckets since {}", first.second.format("%H:%M:%S")),
        y_max,
    );
    let colours = ["#f2a900", "#2da44e", "#cf222e", "#8250df"];
    let bar_w = (WIDTH - 10.0 - PAD) / bars as f64;
    let scale = (HEIGHT - PAD - TOP) / y_max as f64;
    for (i, bucket) in buckets.iter().enumerate() {
        let mut base = HEIGHT - PAD;
        for (v, colour) in bucket.iter().zip(colours) {
            if *v == 0 {
                continue;
            }
            let height = *v as f64 * scale;
            base -= height;
            let _ = write!(
                h,
                "<rect x=\"{:.1}\" y=\"{base:.1}\" width=\"{:.1}\" height=\"{height:.1}\" fill=\"{colour}\"/>",
                PAD + i as f64 * bar_w,
                (bar_w - 1.0).max(0.5)
            );
        }
    }
    for (i, (name, colour)) in ["holds", "bookings", "expiries", "other releases"]
        .iter()
        .zip(colours)
        .enumerate()
    {
        let x = PAD + 10.0 + i as f64 * 110.0;
        let _ = write!(
            h,
            "<rect x=\"{x}\" y=\"4\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{}\" y=\"13\">{name}</text>",
            x + 14.0
        );
    }
    h.push_str("</svg>\n");
}

/// The queue wait distribution (only drawn when the log has queue facts).
fn queue_chart(h: &mut String, q: &QueueFigures) {
    svg_open(h, "queue-waits", HEIGHT, "queue wait distribution");
    let y_max = q.wait_buckets.iter().map(|b| b.1).max().unwrap_or(1).max(1);
    axes(h, "wait (seconds)", y_max);
    let bar_w = (WIDTH - 10.0 - PAD) / q.wait_buckets.len().max(1) as f64;
    for (i, (upper, fans)) in q.wait_buckets.iter().enumerate() {
        let height = *fans as f64 / y_max as f64 * (HEIGHT - PAD - TOP);
        let x = PAD + i as f64 * bar_w;
        let _ = write!(
            h,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{height:.1}\" fill=\"#1f6feb\"/><text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{upper}</text>",
            HEIGHT - PAD - height,
            (bar_w - 1.0).max(0.5),
            x + bar_w / 2.0,
            HEIGHT - PAD + 12.0
        );
    }
    h.push_str("</svg>\n");
}

/// Every seat as a small square, rows left to right and top to bottom within its section, the
/// sections laid out left to right and wrapped to the page width; a standing zone's places as a
/// block of squares [`ZONE_COLUMNS`] wide, lowest-numbered first (the order they are taken in).
/// Coloured from dark (sold first) to light (sold last), unsold seats grey.
fn seat_map(h: &mut String, e: &EventReport) {
    const CELL: f64 = 4.0;
    const GAP: f64 = 12.0;
    const LABEL: f64 = 12.0;
    let map = e.layout.map();
    let sold: Vec<i64> = e.sold_at.iter().flatten().map(|t| t.timestamp()).collect();
    let (t0, t1) = (
        sold.iter().min().copied().unwrap_or(0),
        sold.iter().max().copied().unwrap_or(0),
    );
    let span = (t1 - t0).max(1) as f64;
    // Each section's squares as (column, line, flat seat index), and its size in squares.
    let blocks: Vec<SectionBlock> = (0..e.layout.section_count())
        .map(|si| SectionBlock::new(e.layout.section_rows(si)))
        .collect();
    // Place the sections: (x, y) of each block's top left corner.
    let mut places = Vec::with_capacity(blocks.len());
    let (mut x, mut y, mut line_height, mut width) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for block in &blocks {
        let w = f64::from(block.columns.max(1)) * CELL;
        let h = f64::from(block.lines) * CELL + LABEL;
        if x > 0.0 && x + w > WIDTH {
            x = 0.0;
            y += line_height + GAP;
            line_height = 0.0;
        }
        places.push((x, y));
        x += w + GAP;
        width = width.max(x - GAP);
        line_height = line_height.max(h);
    }
    let height = y + line_height;
    let _ = write!(
        h,
        "<svg id=\"seatmap-{}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" width=\"{}\" role=\"img\" aria-label=\"seat map by sale second\" font-family=\"sans-serif\" font-size=\"9\">",
        e.event_id,
        width.min(WIDTH)
    );
    for ((section, block), (x, y)) in map.sections.iter().zip(&blocks).zip(places) {
        let standing = if section.standing.is_some() { " (standing)" } else { "" };
        let _ = write!(
            h,
            "<text x=\"{x}\" y=\"{:.1}\">{}{standing}</text>",
            y + 9.0,
            esc(section.code.as_str())
        );
        for (column, line, seat) in block.squares() {
            let colour = match e.sold_at.get(seat as usize).copied().flatten() {
                Some(t) => ramp((t.timestamp() - t0) as f64 / span),
                None => "#d0d7de".to_owned(),
            };
            let _ = write!(
                h,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{}\" height=\"{}\" fill=\"{colour}\"/>",
                x + f64::from(column) * CELL,
                y + LABEL + f64::from(line) * CELL,
                CELL - 0.5,
                CELL - 0.5
            );
        }
    }
    let _ = writeln!(
        h,
        "</svg>\n<p class=\"note\">Dark: sold first, light: sold last ({}s from the first to the last sale still standing); grey: unsold.</p>",
        t1 - t0
    );
}

/// How many squares wide a standing zone's block is drawn.
const ZONE_COLUMNS: u32 = 50;

/// One section of the drawn seat map: its rows (or its zone's places) as lines of squares.
struct SectionBlock<'a> {
    spans: &'a [RowSpan],
    /// Squares across and lines down.
    columns: u32,
    lines: u32,
}

impl<'a> SectionBlock<'a> {
    fn new(spans: &'a [RowSpan]) -> Self {
        let (mut columns, mut lines) = (0, 0);
        for span in spans {
            let (c, l) = Self::shape(span);
            columns = u32::max(columns, c);
            lines += l;
        }
        Self { spans, columns, lines }
    }

    /// A row is one line of its seats; a zone wraps its places every [`ZONE_COLUMNS`].
    fn shape(span: &RowSpan) -> (u32, u32) {
        let seats = u32::from(span.seats);
        if span.standing {
            (seats.min(ZONE_COLUMNS), seats.div_ceil(ZONE_COLUMNS))
        } else {
            (seats, 1)
        }
    }

    /// Every square as `(column, line, flat seat index)`.
    fn squares(&self) -> impl Iterator<Item = (u32, u32, u32)> + '_ {
        let mut first_line = 0;
        self.spans.iter().flat_map(move |span| {
            let (columns, lines) = Self::shape(span);
            let top = first_line;
            first_line += lines;
            (0..u32::from(span.seats)).map(move |n| (n % columns.max(1), top + n / columns.max(1), span.start + n))
        })
    }
}

/// A colour from dark blue (0) to yellow (1).
fn ramp(f: f64) -> String {
    let f = f.clamp(0.0, 1.0);
    let (a, b) = ((0x0a, 0x2a, 0x6b), (0xf5, 0xd0, 0x3b));
    let mix = |x: u8, y: u8| (f64::from(x) + (f64::from(y) - f64::from(x)) * f).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_colours_run_dark_to_light() {
        assert_eq!(
            esc("<a href=\"x\">&</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;"
        );
        assert_eq!(ramp(0.0), "#0a2a6b");
        assert_eq!(ramp(1.0), "#f5d03b");
        assert_eq!(money(123_456), "1234.56");
    }

    #[test]
    fn a_standing_zone_is_drawn_as_lines_of_its_places() {
        let span = |row, start, seats, standing| RowSpan {
            section: 0,
            row,
            start,
            seats,
            price: 100,
            standing,
        };
        let zone = [span(0, 40, 120, true)];
        let block = SectionBlock::new(&zone);
        assert_eq!((block.columns, block.lines), (ZONE_COLUMNS, 3));
        let squares: Vec<_> = block.squares().collect();
        assert_eq!(squares.len(), 120);
        assert_eq!(squares[0], (0, 0, 40));
        assert_eq!(squares[50], (0, 1, 90));
        assert_eq!(squares[119], (19, 2, 159));
        // Rows are a line each, as wide as the widest.
        let rows = [span(0, 0, 10, false), span(1, 10, 14, false)];
        let block = SectionBlock::new(&rows);
        assert_eq!((block.columns, block.lines), (14, 2));
        assert_eq!(block.squares().last(), Some((13, 1, 23)));
    }

    #[test]
    fn the_queue_chart_draws_one_bar_per_bucket() {
        let mut h = String::new();
        queue_chart(
            &mut h,
            &QueueFigures {
                joins: 10,
                pre_queue_joins: 4,
                admissions: 8,
                lapsed: 1,
                spent: 6,
                left: 1,
                told_sold_out: 1,
                waitlist_joins: 0,
                waitlist_offers: 0,
                wait_median_seconds: Some(3.0),
                wait_p95_seconds: Some(9.0),
                wait_buckets: vec![(1.0, 2), (5.0, 5), (10.0, 1)],
            },
        );
        assert!(h.starts_with("<svg id=\"queue-waits\""));
        assert_eq!(h.matches("<rect").count(), 3);
    }
}
