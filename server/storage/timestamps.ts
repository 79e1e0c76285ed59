// What a PostgreSQL timestamp column can hold: JavaScript reads some valid RFC 3339 texts
// as no date at all (a leap second) and others as dates PostgreSQL refuses (year 0, or
// before 4713 BC), and either would fail a query with a 500 instead of the caller's 4xx.

/** Years every client and the database agree on: RFC 3339's four-digit years, without year 0. */
const FIRST_YEAR = 1;
const LAST_YEAR = 9999;

/** The instant `text` names, or null when it is not one the database can store. */
export function storableDate(text: string): Date | null {
  const date = new Date(text);
  if (Number.isNaN(date.getTime())) return null;
  const year = date.getUTCFullYear();
  return year >= FIRST_YEAR && year <= LAST_YEAR ? date : null;
}
