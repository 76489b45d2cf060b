// check.mjs: DuckDB, an independent reader, checks the finance export.
//
// usage: node check.mjs DIR
// DIR holds listing.csv, listing/ (Parquet, hive-partitioned by dt),
// daily.csv and daily.parquet, exported from one index. Exits non-zero on
// any mismatch:
//   - the listing Parquet has the listing CSV's row count, and a dt column
//     equal to the UTC date of observed_at in every row;
//   - the daily Parquet has the daily CSV's row count;
//   - the daily CSV and Parquet have exactly one row per (date, gpu, kind),
//     every one in USD (rows in a currency without an fx rate are left out);
//   - for each night, the RTX 4090 on-demand median DuckDB computes from the
//     Parquet (median(price_usd_per_gpu_hour) over the listings of each
//     source's latest run at or before the daily row's as_of, no older than
//     max_age = 36 h, the default) equals the daily CSV's median to 1e-6;
//     so does every other USD row of the daily CSV.
import { DuckDBInstance } from '@duckdb/node-api';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node check.mjs DIR');
  process.exit(2);
}
const q = (s) => "'" + s.replaceAll("'", "''") + "'";
const listingCSV = q(`${dir}/listing.csv`);
const listingParquet = q(`${dir}/listing/**/*.parquet`);
const dailyCSV = q(`${dir}/daily.csv`);
const dailyParquet = q(`${dir}/daily.parquet`);
const maxAgeUs = 36n * 3600n * 1000000n;

const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const all = async (sql) => (await con.runAndReadAll(sql)).getRowObjectsJS();
const one = async (sql) => Object.values((await all(sql))[0])[0];

let failures = 0;
const check = (ok, msg) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${msg}`);
  if (!ok) failures++;
};

await con.run(`CREATE TABLE p AS SELECT *, epoch_us(observed_at) AS obs_us
  FROM read_parquet(${listingParquet}, hive_partitioning = true)`);
const csvRows = Number(await one(`SELECT count(*) FROM read_csv_auto(${listingCSV})`));
const parquetRows = Number(await one(`SELECT count(*) FROM p`));
check(csvRows > 0 && csvRows === parquetRows, `listing rows: csv ${csvRows}, parquet ${parquetRows}`);

const cols = (await all(`DESCRIBE p`)).map((r) => r.column_name);
check(cols.includes('dt'), `hive partitioning gives a dt column (columns: ${cols.join(', ')})`);
const badDt = Number(await one(`SELECT count(*) FROM p
  WHERE CAST(dt AS VARCHAR) <> strftime(make_timestamp(obs_us), '%Y-%m-%d')`));
check(badDt === 0, `dt is the UTC date of observed_at (${badDt} rows differ)`);

const dailyCSVRows = Number(await one(`SELECT count(*) FROM read_csv_auto(${dailyCSV})`));
const dailyParquetRows = Number(await one(`SELECT count(*) FROM read_parquet(${dailyParquet})`));
check(dailyCSVRows > 0 && dailyCSVRows === dailyParquetRows, `daily rows: csv ${dailyCSVRows}, parquet ${dailyParquetRows}`);

// One row per (date, gpu, kind), in USD, in both daily files.
for (const [name, src] of [['csv', `read_csv(${dailyCSV}, header = true, all_varchar = true)`], ['parquet', `read_parquet(${dailyParquet})`]]) {
  const dups = await all(`SELECT CAST(date AS VARCHAR) AS date, gpu, kind, count(*) AS n FROM ${src}
    GROUP BY ALL HAVING count(*) > 1 ORDER BY ALL LIMIT 5`);
  check(dups.length === 0, `daily ${name}: one row per (date, gpu, kind)` +
    (dups.length ? ` (duplicates: ${dups.map((d) => `${d.date} ${d.gpu} ${d.kind} x${d.n}`).join('; ')})` : ''));
  const nonUSD = Number(await one(`SELECT count(*) FROM ${src} WHERE currency <> 'USD'`));
  check(nonUSD === 0, `daily ${name}: every row in USD (${nonUSD} are not)`);
}

// The per-run medians, as the issue phrases it: grouped by observed_at.
const perRun = await all(`SELECT source, strftime(make_timestamp(obs_us), '%Y-%m-%dT%H:%M:%SZ') AS observed_at,
    count(*) AS listings, median(price_usd_per_gpu_hour) AS median
  FROM p WHERE gpu = 'RTX 4090' AND kind = 'on-demand'
  GROUP BY source, obs_us ORDER BY obs_us, source`);
for (const r of perRun) {
  console.log(`     duckdb: ${r.source} ${r.observed_at} RTX 4090 on-demand: ${r.listings} listings, median ${r.median}`);
}

// DuckDB's median of a snapshot: the listings of each source's latest run
// at or before asOf, no older than max_age.
const snapshotMedian = (gpu, kind, asOfUs) => one(`WITH runs AS (
    SELECT source, max(obs_us) AS run FROM p WHERE obs_us <= ${asOfUs} GROUP BY source
    HAVING max(obs_us) >= ${asOfUs - maxAgeUs})
  SELECT median(p.price_usd_per_gpu_hour) FROM p JOIN runs ON p.source = runs.source AND p.obs_us = runs.run
  WHERE p.gpu = ${q(gpu)} AND p.kind = ${q(kind)}`);

// as_of is RFC 3339 with fractional seconds when they are not zero: DuckDB
// parses it to the microsecond (Date.parse would stop at milliseconds).
const daily = await all(`SELECT date, gpu, kind, median, as_of,
    CAST(epoch_us(CAST(as_of AS TIMESTAMPTZ)) AS VARCHAR) AS as_of_us
  FROM read_csv(${dailyCSV}, header = true, all_varchar = true)
  WHERE currency = 'USD' ORDER BY date, gpu, kind`);
const nights = daily.filter((n) => n.gpu === 'RTX 4090' && n.kind === 'on-demand');
check(nights.length > 0, `the daily CSV has RTX 4090 on-demand rows (${nights.length})`);
let others = 0;
for (const n of daily) {
  const asOfUs = BigInt(n.as_of_us);
  const duck = await snapshotMedian(n.gpu, n.kind, asOfUs);
  const ok = duck !== null && Math.abs(Number(duck) - Number(n.median)) <= 1e-6;
  const msg = `${n.date} ${n.gpu} ${n.kind} median: daily csv ${n.median}, duckdb from parquet ${duck}`;
  if (n.gpu === 'RTX 4090' && n.kind === 'on-demand') {
    check(ok, msg);
  } else if (!ok) {
    check(false, msg);
  } else {
    others++;
  }
}
check(others === daily.length - nights.length, `the other ${others} USD daily rows agree with DuckDB's median too`);

if (failures > 0) {
  console.error(`duckdb-check: ${failures} checks failed`);
  process.exit(1);
}
console.log('duckdb-check: all checks passed');
