// Package stats turns a market snapshot into price statistics and flags
// disappearing floor listings. It is pure: it does no I/O and reads no
// clock; every instant comes in the snapshot (AsOf, each run's start) or as
// a parameter. The index builds the snapshot; this package only reads it.
//
// The definitions (DESIGN §4), in plain words:
//
//   - Market snapshot at T: for each source, its latest ok run started at or
//     before T, if that run is no older than the maximum age (36 h by
//     default); the snapshot is the available listings present in those runs.
//     A source whose latest ok run is older is stale and contributes nothing.
//     The index applies this rule; stats trusts snap.Present to hold only
//     fresh listings.
//
//   - Row: the statistics of one (GPU, kind, currency) in a snapshot. Each
//     listing counts once, whatever its GPU count. Listings in a currency
//     other than USD are converted with the FX rate recorded with their
//     source's run (Convert); a listing whose currency has no rate is not
//     guessed into USD: it forms a row of its own, in its own currency.
//     An empty currency is taken as USD.
//
//   - Listings: the number of listings in the row.
//
//   - Percentiles p10, p25, p75, p90 are "type 7" (R's default, numpy's
//     "linear"): with n sorted prices x[0..n-1] and h = (n-1)q, the value is
//     x[⌊h⌋] + (h-⌊h⌋)(x[⌊h⌋+1] - x[⌊h⌋]). q is read as the decimal it is
//     written as (0.1 means one tenth, not the nearest binary float), and the
//     result is rounded to the nearest micro-unit, halves away from zero.
//
//   - Median: the middle price; with an even count, the mean of the two
//     middle prices, rounded the same way. It equals the type-7 p50.
//
//   - Floor: the lowest price in the row.
//
//   - Floor listing: a listing whose price, at some ok run where it was
//     present, was at or below the p10 of its row in the snapshot at that
//     run's time. The index records the first such run as FloorAt; FloorKeys
//     gives it the listings to mark. A present listing counts as a floor
//     listing when its FloorAt is set and not later than its run, or when its
//     price is at or below the p10 of its row in this very snapshot; the
//     second test makes the rows stored for a run (computed before that run's
//     FloorAt marks are written) agree with the rows read back later.
//
//   - Disappeared: the first ok run of the listing's source after its last
//     sighting (last_seen) does not list it; gone_at is that run's start.
//     Failed runs do not count: they close nothing. The index decides this;
//     snap.Gone holds the result.
//
//   - Lifetime: last_seen - first_seen of the listing's continuous presence
//     (zero for a listing seen by one run only).
//
//   - Disappearing floor listing (status "disappeared"): a floor listing that
//     disappeared with a lifetime below min_life (24 h by default) and with
//     as_of - window <= gone_at <= as_of (window: 7 days by default). The
//     row's Disappearing field counts these.
//
//   - Unconfirmed (status "unconfirmed"): a floor listing still present whose
//     presence so far (its run's start - first_seen) is below min_life. The
//     row's Unconfirmed field counts these; Flags lists them only when asked
//     (pending).
//
//   - Durable floor: the lowest price among the row's listings whose presence
//     so far (run start - first_seen) is at least min_life; null when there
//     is none yet. A listing exactly min_life old counts.
//
//   - Live: a row is live when the snapshot has at least one listing in it.
//     A row that is not live still appears when the index knows the last ok
//     run that had listings of it (snap.LastListed); its LastOKRun says how
//     old the last price is, and its price fields are zero.
//
//   - LastOKRun: for a live row, the latest start among the runs its listings
//     come from; for a row that is not live, the LastListed time. Each
//     per-source part carries its own run's start.
//
// Rows are ordered by catalog order of GPU (unknown names last,
// alphabetically), then kind (on-demand, interruptible, monthly), then
// currency (USD first, then alphabetically).
package stats
