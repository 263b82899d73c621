// Tests use a throwaway key on purpose.
const key = "sk_live_51HtestOnlyKeyNotReal000000000";
test("client builds", () => expect(key).toBeTruthy());
