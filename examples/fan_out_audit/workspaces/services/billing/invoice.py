def total(lines):
    # TODO: round each line to cents before summing
    return sum(price * qty for price, qty in lines)
