export default function Loading() {
  return <p role="status">Loading the shop…</p>;
}
