"""placeholder"""
def add_arguments(p):
    return p
def run(args):
    raise NotImplementedError
