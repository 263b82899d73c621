export function search(index, query) {
  return index.filter((doc) => doc.text.includes(query));
}
