/* The command table of the shell and tab completion (lang.h).
 *
 * One table names every command and function once. The parser asks it which
 * names start statements, which take raw words and which keywords each
 * accepts; the shell dispatches and prints `help` from it; completion
 * proposes from it; the docs' command list is generated from it. Adding a
 * command means adding a row here, and the tests check every row's example
 * against the parser. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distlab/coll.h"
#include "distlab/dtype.h"
#include "distlab/op.h"
#include "distlab/sched.h"
#include "lab/lang/internal.h"

/* ======================================================================
 * The table
 * ====================================================================== */

static const char *const kw_none[] = {NULL};
static const char *const kw_print[] = {"sep", "end", "flush", NULL};
static const char *const kw_factory[] = {"dtype", "device", NULL};
static const char *const kw_rand[] = {"size", "seed", "dtype", "device", NULL};
static const char *const kw_randint[] = {"low", "high", "size", "seed", "dtype", "device", NULL};
static const char *const kw_randperm[] = {"n", "seed", "dtype", "device", NULL};
static const char *const kw_manual_seed[] = {"seed", NULL};
static const char *const kw_new_group[] = {"ranks", NULL};
static const char *const kw_group_only[] = {"group", NULL};
static const char *const kw_reduction[] = {"dim", "keepdim", NULL};
static const char *const kw_decimals[] = {"decimals", NULL};
static const char *const kw_var[] = {"dim", "unbiased", "keepdim", "correction", NULL};
static const char *const kw_transpose[] = {"dim0", "dim1", NULL};
static const char *const kw_dim[] = {"dim", NULL};
static const char *const kw_alpha[] = {"alpha", NULL};
static const char *const kw_enumerate[] = {"start", NULL};
static const char *const kw_flatten[] = {"start_dim", "end_dim", NULL};
static const char *const kw_send[] = {"dst", "group", "tag", NULL};
static const char *const kw_recv[] = {"src", "group", "tag", NULL};
static const char *const kw_broadcast[] = {"src", "group", "async_op", NULL};
static const char *const kw_scatter[] = {"src", "scatter_list", "group", "async_op", NULL};
static const char *const kw_gather[] = {"dst", "gather_list", "group", "async_op", NULL};
static const char *const kw_reduce[] = {"dst", "op", "group", "async_op", NULL};
static const char *const kw_op_group[] = {"op", "group", "async_op", NULL};
static const char *const kw_group[] = {"group", "async_op", NULL};
static const char *const kw_gather_object[] = {"object_gather_list", "dst", "group", NULL};
static const char *const kw_src_group[] = {"src", "group", NULL};
static const char *const kw_src_group_device[] = {"src", "group", "device", NULL};
static const char *const kw_p2pop[] = {"op", "tensor", "peer", "group", "tag", NULL};
static const char *const kw_a2a_single[] = {"output_split_sizes", "input_split_sizes", "group",
                                            "async_op", NULL};
static const char *const kw_to[] = {"dtype", "device", NULL};
static const char *const kw_clamp[] = {"min", "max", NULL};
static const char *const kw_sorted[] = {"key", "reverse", NULL};
static const char *const kw_minmax[] = {"dim", "keepdim", "key", NULL};
static const char *const kw_close[] = {"rtol", "atol", "equal_nan", NULL};
static const char *const kw_sort[] = {"key", "reverse", "dim", "descending", "stable", NULL};
static const char *const kw_argsort[] = {"dim", "descending", "stable", NULL};
static const char *const kw_topk[] = {"k", "dim", "largest", "sorted", NULL};
static const char *const kw_dim_dtype[] = {"dim", "dtype", NULL};
static const char *const kw_norm[] = {"p", "dim", "keepdim", NULL};
static const char *const kw_dot[] = {"tensor", NULL};
static const char *const kw_mm[] = {"mat2", NULL};

#define FN       LAB_CMD_FUNCTION
#define RAW      LAB_CMD_RAW_WORDS
#define SESSION  LAB_CMD_SESSION
#define WORLD    LAB_CMD_NEEDS_WORLD
#define PAUSED   LAB_CMD_WHILE_PAUSED
#define NONE     LAB_CMD_ID_NONE
#define METHOD   (LAB_CMD_FUNCTION | LAB_CMD_METHOD)
#define OPERATOR (METHOD | LAB_CMD_FREE_NAME)
#define ONLY     (LAB_CMD_FUNCTION | LAB_CMD_METHOD | LAB_CMD_METHOD_ONLY)
/* a method of a list, l.append(x): of a value, never a tensor's */
#define LIST_METHOD (LAB_CMD_FUNCTION | LAB_CMD_METHOD_ONLY | LAB_CMD_OBJECT_METHOD)
#define PAIR_ATTR                                                                                  \
    (LAB_CMD_FUNCTION | LAB_CMD_METHOD_ONLY | LAB_CMD_ATTRIBUTE | LAB_CMD_OBJECT_METHOD)

/* Session rows (LAB_CMD_SESSION) say when they may run: WORLD waits for
 * every rank to be ready, PAUSED may run while a collective waits in step
 * mode. What they do is the shell's (lab/shell/shell_cmds.c), found by id. */
static const lab_cmd_t table[] = {
    /* ---- tensors ---- */
    {"arange", LAB_CAT_TENSOR, FN, NONE, "arange([START,] END[, STEP], [dtype=D], [device=cpu])",
     "a 1-D tensor of the values START, START+STEP, ... below END",
     "torch.arange(start=0, end, step=1, *, dtype=None, device=None)", "t = arange(4) + 1 + 2*rank",
     kw_factory},
    {"linspace", LAB_CAT_TENSOR, FN, NONE,
     "linspace(START, END, STEPS, [dtype=float32], [device=cpu])",
     "STEPS values evenly spaced from START to END, both included",
     "torch.linspace(start, end, steps, *, dtype=None, device=None)", "x = linspace(0, 1, 5)",
     kw_factory},
    {"eye", LAB_CAT_TENSOR, FN, NONE, "eye(N, [M], [dtype=float32], [device=cpu])",
     "the N x M identity matrix (ones on the diagonal)",
     "torch.eye(n, m=None, *, dtype=None, device=None)", "i = eye(3)", kw_factory},
    {"zeros", LAB_CAT_TENSOR, FN, NONE, "zeros(SIZE..., [dtype=float32], [device=cpu])",
     "a tensor filled with 0", "torch.zeros(*size, *, dtype=None, device=None)", "t = zeros(4)",
     kw_factory},
    {"ones", LAB_CAT_TENSOR, FN, NONE, "ones(SIZE..., [dtype=float32], [device=cpu])",
     "a tensor filled with 1", "torch.ones(*size, *, dtype=None, device=None)",
     "t = ones(3, dtype=float32)", kw_factory},
    {"empty", LAB_CAT_TENSOR, FN, NONE, "empty(SIZE..., [dtype=float32], [device=cpu])",
     "a tensor to be written into (filled with 0 here)",
     "torch.empty(*size, *, dtype=None, device=None)", "out = empty(4, dtype=int64)", kw_factory},
    {"full", LAB_CAT_TENSOR, FN, NONE, "full(SIZE, VALUE, [dtype=D], [device=cpu])",
     "a tensor filled with VALUE", "torch.full(size, fill_value, *, dtype=None, device=None)",
     "t = full(2, 7)", kw_factory},
    {"zeros_like", LAB_CAT_TENSOR, FN, NONE, "zeros_like(TENSOR, [dtype=D], [device=cpu])",
     "zeros of the tensor's shape, dtype and device",
     "torch.zeros_like(input, *, dtype=None, device=None)", "g = zeros_like(t)", kw_factory},
    {"ones_like", LAB_CAT_TENSOR, FN, NONE, "ones_like(TENSOR, [dtype=D], [device=cpu])",
     "ones of the tensor's shape, dtype and device",
     "torch.ones_like(input, *, dtype=None, device=None)", "o = ones_like(t)", kw_factory},
    {"empty_like", LAB_CAT_TENSOR, FN, NONE, "empty_like(TENSOR, [dtype=D], [device=cpu])",
     "a tensor of the tensor's shape, dtype and device to be written into (filled with 0 here)",
     "torch.empty_like(input, *, dtype=None, device=None)", "out = empty_like(t)", kw_factory},
    {"rand_like", LAB_CAT_TENSOR, FN, NONE, "rand_like(TENSOR, [dtype=D], [device=cpu])",
     "uniform random numbers in [0, 1) of the tensor's shape, dtype and device, as rand draws",
     "torch.rand_like(input, *, dtype=None, device=None)", "noise = rand_like(t)", kw_factory},
    {"randn_like", LAB_CAT_TENSOR, FN, NONE, "randn_like(TENSOR, [dtype=D], [device=cpu])",
     "normal random numbers of the tensor's shape, dtype and device, as randn draws",
     "torch.randn_like(input, *, dtype=None, device=None)", "noise = randn_like(t)", kw_factory},
    {"full_like", LAB_CAT_TENSOR, FN, NONE, "full_like(TENSOR, VALUE, [dtype=D], [device=cpu])",
     "VALUE in the tensor's shape, dtype and device",
     "torch.full_like(input, fill_value, *, dtype=None, device=None)", "f = full_like(t, 7)",
     kw_factory},
    {"rand", LAB_CAT_TENSOR, FN, NONE,
     "rand(SIZE... | size=(D, ...), [seed=S], [dtype=float32], [device=cpu])",
     "uniform random values in [0, 1) as torch draws them; seed=S: a fresh generator",
     "torch.rand(*size, *, generator=None, dtype=None, device=None)", "t = rand(2, 3)", kw_rand},
    {"randn", LAB_CAT_TENSOR, FN, NONE,
     "randn(SIZE... | size=(D, ...), [seed=S], [dtype=float32], [device=cpu])",
     "normal random values (mean 0, std 1) as torch draws them",
     "torch.randn(*size, *, generator=None, dtype=None, device=None)", "t = randn(4, seed=rank)",
     kw_rand},
    {"randint", LAB_CAT_TENSOR, FN, NONE,
     "randint([[low=]LOW,] [high=]HIGH, [size=](D, ...), [seed=S], [dtype=int64], [device=cpu])",
     "random integers in [LOW, HIGH) (LOW 0 if left out) as torch draws them",
     "torch.randint(low=0, high, size, *, generator=None, dtype=None, device=None)",
     "t = randint(0, 10, (2, 3))", kw_randint},
    {"randperm", LAB_CAT_TENSOR, FN, NONE, "randperm([n=]N, [seed=S], [dtype=int64], [device=cpu])",
     "0 to N - 1 in a random order, as torch shuffles them",
     "torch.randperm(n, *, generator=None, dtype=torch.int64, device=None)",
     "order = randperm(len(data))", kw_randperm},
    {"manual_seed", LAB_CAT_TENSOR, 0, NONE, "manual_seed [seed=]SEED",
     "seed this rank's random numbers as torch does (a rank starts with its rank)",
     "torch.manual_seed(seed)", "manual_seed(42)", kw_manual_seed},
    {"initial_seed", LAB_CAT_TENSOR, FN, NONE, "initial_seed()",
     "the seed this rank's generator was last seeded with", "torch.initial_seed()",
     "s = initial_seed()", kw_none},
    {"tensor", LAB_CAT_TENSOR, FN, NONE, "tensor(LIST or NUMBER, [dtype=D], [device=cpu])",
     "a tensor holding the values of LIST, or of no dimensions holding NUMBER",
     "torch.tensor(data, *, dtype=None, device=None)", "t = tensor([[1, 2], [3, 4]])", kw_factory},
    /* Python's own, as the tutorials use them: size = float(dist.get_world_size()) */
    {"float", LAB_CAT_TENSOR, METHOD, NONE, "float(VALUE)  or  TENSOR.float()",
     "a number, or a one-element tensor, as a Python float; t.float() is a float32 copy of t",
     "float(x), Tensor.float()", "size = float(world_size)", kw_none},
    {"int", LAB_CAT_TENSOR, METHOD, NONE, "int(VALUE)  or  TENSOR.int()",
     "a number, or a one-element tensor, as a Python int (towards zero); t.int() is an int32 "
     "copy of t",
     "int(x), Tensor.int()", "n = int(t.sum())", kw_none},
    {"len", LAB_CAT_TENSOR, FN, NONE, "len(VALUE)",
     "the items of a list or string, or a tensor's first dimension", "len(s)",
     "n = len(tensor_list)", kw_none},
    {"type", LAB_CAT_TENSOR, FN, NONE, "type(VALUE)",
     "VALUE's class as Python prints it: <class 'torch.Tensor'>, <class 'int'>", "type(object)",
     "print(type(t))", kw_none},
    {"isinstance", LAB_CAT_TENSOR, FN, NONE, "isinstance(VALUE, CLASS)",
     "whether VALUE is of CLASS (int, float, bool, str, list, tuple, dict, torch.Tensor, or a "
     "tuple of them), as Python's: a bool is an int, torch.Size a tuple",
     "isinstance(object, classinfo)", "if isinstance(x, torch.Tensor): x = x.item()", kw_none},
    {"str", LAB_CAT_TENSOR, FN, NONE, "str(VALUE)",
     "VALUE as print writes it, a string (a tensor as torch prints it)", "str(object)",
     "name = 'rank' + str(rank)", kw_none},
    {"repr", LAB_CAT_TENSOR, FN, NONE, "repr(VALUE)",
     "VALUE as the prompt shows it, a string: a string in its quotes, 'a\\n' with its escapes",
     "repr(object)", "print('got ' + repr(s))", kw_none},
    {"round", LAB_CAT_TENSOR, METHOD, NONE,
     "round(NUMBER[, DIGITS])  or  round(TENSOR, [decimals=D])",
     "a number rounded half to even, to an int, or to DIGITS decimals; a tensor's elements so "
     "(torch.round)",
     "round(number, ndigits), torch.round(input, *, decimals=0)", "ms = round(t.item(), 3)",
     kw_decimals},
    {"sorted", LAB_CAT_TENSOR, FN, NONE, "sorted(ITERABLE, [key=F], [reverse=False])",
     "a new list of the items in order (numbers, strings, tuples; equal ones keep their order); "
     "key=, a function of one item (a def, a lambda, len), orders them by what it gives",
     "sorted(iterable, *, key=None, reverse=False)", "order = sorted(sizes, key=lambda s: -s)",
     kw_sorted},
    {"reversed", LAB_CAT_TENSOR, FN, NONE, "reversed(SEQUENCE)",
     "the items of a list, tuple, range or string from the last (a list here)", "reversed(seq)",
     "back = list(reversed(l))", kw_none},
    {"any", LAB_CAT_TENSOR, METHOD, NONE, "any(ITERABLE)  or  torch.any(TENSOR)",
     "whether any item is true; torch.any and t.any() give a bool tensor",
     "any(iterable), torch.any(input)", "if any(flags): print('stop')", kw_none},
    {"all", LAB_CAT_TENSOR, METHOD, NONE, "all(ITERABLE)  or  torch.all(TENSOR)",
     "whether every item is true; torch.all and t.all() give a bool tensor",
     "all(iterable), torch.all(input)", "ok = all([x > 0 for x in l])", kw_none},
    {"dict", LAB_CAT_TENSOR, FN, NONE, "dict([PAIRS], [NAME=VALUE, ...])",
     "a new dict: of another dict's items, of (key, value) pairs, or of keyword arguments",
     "dict(**kwargs)", "d = dict(zip(names, values))", kw_none},
    {"list", LAB_CAT_TENSOR, FN, NONE, "list(ITERABLE)",
     "a new list of the items of a list, a tuple, range(...), a string or a tensor's rows",
     "list(iterable)", "g = new_group(list(range(world_size)))", kw_none},
    {"tuple", LAB_CAT_TENSOR, FN, NONE, "tuple(ITERABLE)",
     "a new tuple of the items of a list, a tuple, range(...), a string or a tensor's rows",
     "tuple(iterable)", "dims = tuple(t.shape)", kw_none},
    {"enumerate", LAB_CAT_TENSOR, FN, NONE, "enumerate(ITERABLE, start=0)",
     "a list of (index, item) tuples of a list, a tuple or a tensor's rows, as "
     "list(enumerate(x)) gives them",
     "enumerate(iterable, start=0)", "for i, t in enumerate(tensor_list): print(i, t)",
     kw_enumerate},
    {"zip", LAB_CAT_TENSOR, FN, NONE, "zip(A, B, ...)",
     "a list of tuples of the items of A, B, ... side by side, as long as the shortest",
     "zip(*iterables)", "for a, b in zip(xs, ys): print(a, b)", kw_none},
    {"print", LAB_CAT_TENSOR, 0, NONE,
     "print EXPR  or  print(VALUE, 'text', f\"{x}\", ..., [sep=' '], [end='\\n'], [flush=F])",
     "print a tensor or a value, as torch prints it; several values or strings as Python "
     "prints them",
     "print(*objects, sep=' ', end='\\n', flush=False)", "print('Rank ', rank, ' has data ', t[0])",
     kw_print},
    {"tensors", LAB_CAT_TENSOR, 0, NONE, "tensors",
     "list the tensors and handles on each rank with their shapes and dtypes", NULL, "tensors",
     kw_none},

    /* ---- tensor maths: functions, and methods (t.sum()) where torch has them ---- */
    {"sum", LAB_CAT_TENSOR, METHOD, NONE, "sum(TENSOR, [dim=D], [keepdim=false])",
     "the sum of the elements (int64 for an integer tensor), or along dim",
     "torch.sum(input, dim, keepdim=False, *, dtype=None)", "s = t.sum()", kw_reduction},
    {"mean", LAB_CAT_TENSOR, METHOD, NONE, "mean(TENSOR, [dim=D], [keepdim=false])",
     "the mean of the elements of a float tensor, or along dim",
     "torch.mean(input, dim, keepdim=False, *, dtype=None)", "m = mean(t * 1.0)", kw_reduction},
    {"prod", LAB_CAT_TENSOR, METHOD, NONE, "prod(TENSOR, [dim=D], [keepdim=false])",
     "the product of the elements (int64 for an integer tensor), or along dim",
     "torch.prod(input, dim, keepdim=False, *, dtype=None)", "p = t.prod()", kw_reduction},
    {"var", LAB_CAT_TENSOR, METHOD, NONE,
     "var(TENSOR, [dim=D], [unbiased=true], [keepdim=false], [correction=1])",
     "the variance of a float tensor's elements (over n - 1), or along dim",
     "torch.var(input, dim, unbiased, keepdim=False, *, correction=1)", "v = x.var(dim=0)", kw_var},
    {"std", LAB_CAT_TENSOR, METHOD, NONE,
     "std(TENSOR, [dim=D], [unbiased=true], [keepdim=false], [correction=1])",
     "the standard deviation of a float tensor's elements (over n - 1), or along dim",
     "torch.std(input, dim, unbiased, keepdim=False, *, correction=1)", "s = x.std()", kw_var},
    {"max", LAB_CAT_TENSOR, METHOD, NONE,
     "max(TENSOR, [dim=D], [keepdim=false])  or  max(LIST, [key=F])",
     "the largest element; with dim, the pair (values, indices) along dim; of a list (or of "
     "several values), Python's, the first largest by key= when given",
     "torch.max(input, dim, keepdim=False), max(iterable, *, key=None)", "v, i = t.max(dim=0)",
     kw_minmax},
    {"min", LAB_CAT_TENSOR, METHOD, NONE,
     "min(TENSOR, [dim=D], [keepdim=false])  or  min(LIST, [key=F])",
     "the smallest element; with dim, the pair (values, indices) along dim; of a list (or of "
     "several values), Python's, the first smallest by key= when given",
     "torch.min(input, dim, keepdim=False), min(iterable, *, key=None)", "m = min(t)", kw_minmax},
    {"argmax", LAB_CAT_TENSOR, METHOD, NONE, "argmax(TENSOR, [dim=D], [keepdim=false])",
     "the index of the largest element (of the flattened tensor, or along dim)",
     "torch.argmax(input, dim=None, keepdim=False)", "i = t.argmax(dim=0)", kw_reduction},
    {"argmin", LAB_CAT_TENSOR, METHOD, NONE, "argmin(TENSOR, [dim=D], [keepdim=false])",
     "the index of the smallest element (of the flattened tensor, or along dim)",
     "torch.argmin(input, dim=None, keepdim=False)", "i = argmin(t)", kw_reduction},
    {"values", LAB_CAT_TENSOR, PAIR_ATTR, NONE, "PAIR.values",
     "the values of t.max(dim=D) or t.min(dim=D); DICT.values(), the values of a dict",
     "torch.return_types.max.values", "v = t.max(dim=0).values", kw_none},
    {"indices", LAB_CAT_TENSOR, PAIR_ATTR, NONE, "PAIR.indices",
     "the indices of t.max(dim=D) or t.min(dim=D)", "torch.return_types.max.indices",
     "i = t.max(dim=0).indices", kw_none},
    {"append", LAB_CAT_TENSOR, LIST_METHOD, NONE, "LIST.append(X)",
     "adds X at the end of the list, in place", "list.append(x)", "l.append(t * 2)", kw_none},
    {"extend", LAB_CAT_TENSOR, LIST_METHOD, NONE, "LIST.extend(ITEMS)",
     "adds the items of a list or tuple (or a tensor's rows) at the end, in place",
     "list.extend(iterable)", "l.extend([1, 2])", kw_none},
    {"insert", LAB_CAT_TENSOR, LIST_METHOD, NONE, "LIST.insert(I, X)",
     "puts X before item I of the list, in place", "list.insert(i, x)", "l.insert(0, t)", kw_none},
    {"pop", LAB_CAT_TENSOR, LIST_METHOD, NONE, "LIST.pop([I])",
     "removes item I (the last by default) from the list and gives it; DICT.pop(KEY[, DEFAULT]) "
     "the value of KEY",
     "list.pop([i])", "x = l.pop()", kw_none},
    {"remove", LAB_CAT_TENSOR, LIST_METHOD, NONE, "LIST.remove(X)",
     "removes the first item equal to X from the list, in place", "list.remove(x)", "l.remove(3)",
     kw_none},
    {"sort", LAB_CAT_TENSOR, METHOD | LAB_CMD_OBJECT_METHOD, NONE,
     "sort(TENSOR, [dim=-1], [descending=False], [stable=False])  or  "
     "LIST.sort([key=F], [reverse=False])",
     "orders the list's items in place, stable as sorted(), by key= when given; of a tensor, "
     "the pair "
     "(values, indices) along dim, stable, NaN last",
     "list.sort(*, key=None, reverse=False), torch.sort(input, dim=-1, descending=False)",
     "l.sort(reverse=True)", kw_sort},
    {"reverse", LAB_CAT_TENSOR, LIST_METHOD, NONE, "LIST.reverse()", "reverses the list in place",
     "list.reverse()", "l.reverse()", kw_none},
    {"index", LAB_CAT_TENSOR, LIST_METHOD, NONE, "LIST.index(X)",
     "the position of the first item equal to X in a list or tuple (of SUB in a string)",
     "list.index(x)", "i = l.index(3)", kw_none},
    {"count", LAB_CAT_TENSOR, LIST_METHOD, NONE, "LIST.count(X)",
     "how many items of a list or tuple equal X (times SUB is in a string)", "list.count(x)",
     "n = l.count(0)", kw_none},
    {"keys", LAB_CAT_TENSOR, LIST_METHOD, NONE, "DICT.keys()", "the keys of a dict, in order",
     "dict.keys()", "names = list(d.keys())", kw_none},
    {"items", LAB_CAT_TENSOR, LIST_METHOD, NONE, "DICT.items()",
     "the (key, value) pairs of a dict, in order", "dict.items()", "pairs = list(d.items())",
     kw_none},
    {"get", LAB_CAT_TENSOR, LIST_METHOD, NONE, "DICT.get(KEY[, DEFAULT])",
     "the value of KEY in a dict, or DEFAULT (None) when it has none", "dict.get(key[, default])",
     "n = d.get('steps', 0)", kw_none},
    {"update", LAB_CAT_TENSOR, LIST_METHOD, NONE, "DICT.update(OTHER)",
     "sets the keys of another dict (or of (key, value) pairs) in a dict, in place",
     "dict.update([other])", "d.update({'lr': 0.1})", kw_none},
    {"setdefault", LAB_CAT_TENSOR, LIST_METHOD, NONE, "DICT.setdefault(KEY[, DEFAULT])",
     "the value of KEY in a dict, set to DEFAULT (None) first when it has none",
     "dict.setdefault(key[, default])", "d.setdefault('seen', [])", kw_none},
    {"popitem", LAB_CAT_TENSOR, LIST_METHOD, NONE, "DICT.popitem()",
     "removes the (key, value) pair set last from a dict and gives it", "dict.popitem()",
     "k, v = d.popitem()", kw_none},
    {"copy", LAB_CAT_TENSOR, LIST_METHOD, NONE, "DICT.copy()", "a new dict of the same items",
     "dict.copy()", "e = d.copy()", kw_none},
    {"format", LAB_CAT_TENSOR, LIST_METHOD, NONE, "STR.format(VALUE, ..., NAME=VALUE)",
     "the string with its {} fields filled, as Python's ({}, {0}, {name}, {x:.2f}, {x!r})",
     "str.format(*args, **kwargs)", "s = 'rank {} of {}'.format(rank, world_size)", kw_none},
    {"join", LAB_CAT_TENSOR, LIST_METHOD, NONE, "STR.join(STRINGS)",
     "the strings of a list joined, the string between them", "str.join(iterable)",
     "s = ', '.join(names)", kw_none},
    {"strip", LAB_CAT_TENSOR, LIST_METHOD, NONE, "STR.strip([CHARS])",
     "the string without whitespace (or CHARS) at either end", "str.strip([chars])",
     "s = line.strip()", kw_none},
    {"lstrip", LAB_CAT_TENSOR, LIST_METHOD, NONE, "STR.lstrip([CHARS])",
     "the string without whitespace (or CHARS) at its start", "str.lstrip([chars])",
     "s = line.lstrip()", kw_none},
    {"rstrip", LAB_CAT_TENSOR, LIST_METHOD, NONE, "STR.rstrip([CHARS])",
     "the string without whitespace (or CHARS) at its end", "str.rstrip([chars])",
     "s = line.rstrip()", kw_none},
    {"upper", LAB_CAT_TENSOR, LIST_METHOD, NONE, "STR.upper()", "the string in capitals",
     "str.upper()", "s = name.upper()", kw_none},
    {"lower", LAB_CAT_TENSOR, LIST_METHOD, NONE, "STR.lower()", "the string in small letters",
     "str.lower()", "s = name.lower()", kw_none},
    {"startswith", LAB_CAT_TENSOR, LIST_METHOD, NONE, "STR.startswith(PREFIX)",
     "whether the string starts with PREFIX", "str.startswith(prefix)",
     "ok = name.startswith('rank')", kw_none},
    {"endswith", LAB_CAT_TENSOR, LIST_METHOD, NONE, "STR.endswith(SUFFIX)",
     "whether the string ends with SUFFIX", "str.endswith(suffix)", "ok = path.endswith('.pt')",
     kw_none},
    {"replace", LAB_CAT_TENSOR, LIST_METHOD, NONE, "STR.replace(OLD, NEW)",
     "the string with every OLD replaced by NEW", "str.replace(old, new)",
     "s = name.replace('_', ' ')", kw_none},
    {"find", LAB_CAT_TENSOR, LIST_METHOD, NONE, "STR.find(SUB)",
     "where SUB first starts in the string, or -1", "str.find(sub)", "i = name.find(':')", kw_none},
    {"sqrt", LAB_CAT_TENSOR, METHOD, NONE, "sqrt(TENSOR)",
     "the square root of every element (float32 for an integer tensor)", "torch.sqrt(input)",
     "r = sqrt(t)", kw_none},
    {"exp", LAB_CAT_TENSOR, METHOD, NONE, "exp(TENSOR)",
     "e to the power of every element (float32 for an integer tensor)", "torch.exp(input)",
     "e = t.exp()", kw_none},
    {"abs", LAB_CAT_TENSOR, METHOD, NONE, "abs(TENSOR)", "the absolute value of every element",
     "torch.abs(input)", "a = abs(t - 3)", kw_none},
    {"relu", LAB_CAT_TENSOR, METHOD, NONE, "relu(TENSOR)",
     "every element, with the negative ones set to 0", "torch.relu(input)", "r = t.relu()",
     kw_none},
    {"log", LAB_CAT_TENSOR, METHOD, NONE, "log(TENSOR)",
     "the natural logarithm of every element (float32 for an integer tensor)", "torch.log(input)",
     "l = t.log()", kw_none},
    {"log2", LAB_CAT_TENSOR, METHOD, NONE, "log2(TENSOR)",
     "the base-2 logarithm of every element (float32 for an integer tensor)", "torch.log2(input)",
     "b = t.log2()", kw_none},
    {"log10", LAB_CAT_TENSOR, METHOD, NONE, "log10(TENSOR)",
     "the base-10 logarithm of every element (float32 for an integer tensor)", "torch.log10(input)",
     "d = t.log10()", kw_none},
    {"sin", LAB_CAT_TENSOR, METHOD, NONE, "sin(TENSOR)",
     "the sine of every element (float32 for an integer tensor)", "torch.sin(input)", "s = t.sin()",
     kw_none},
    {"cos", LAB_CAT_TENSOR, METHOD, NONE, "cos(TENSOR)",
     "the cosine of every element (float32 for an integer tensor)", "torch.cos(input)",
     "c = t.cos()", kw_none},
    {"tanh", LAB_CAT_TENSOR, METHOD, NONE, "tanh(TENSOR)",
     "the hyperbolic tangent of every element (float32 for an integer tensor)", "torch.tanh(input)",
     "h = t.tanh()", kw_none},
    {"sigmoid", LAB_CAT_TENSOR, METHOD, NONE, "sigmoid(TENSOR)",
     "1 / (1 + exp(-x)) of every element (float32 for an integer tensor)", "torch.sigmoid(input)",
     "p = t.sigmoid()", kw_none},
    {"rsqrt", LAB_CAT_TENSOR, METHOD, NONE, "rsqrt(TENSOR)",
     "1 / sqrt(x) of every element (float32 for an integer tensor)", "torch.rsqrt(input)",
     "r = t.rsqrt()", kw_none},
    {"reciprocal", LAB_CAT_TENSOR, METHOD, NONE, "reciprocal(TENSOR)",
     "1 / x of every element (float32 for an integer tensor)", "torch.reciprocal(input)",
     "r = t.reciprocal()", kw_none},
    {"floor", LAB_CAT_TENSOR, METHOD, NONE, "floor(TENSOR)",
     "every element rounded down (an integer tensor as it is)", "torch.floor(input)",
     "f = t.floor()", kw_none},
    {"ceil", LAB_CAT_TENSOR, METHOD, NONE, "ceil(TENSOR)",
     "every element rounded up (an integer tensor as it is)", "torch.ceil(input)", "c = t.ceil()",
     kw_none},
    {"trunc", LAB_CAT_TENSOR, METHOD, NONE, "trunc(TENSOR)",
     "every element rounded towards zero (an integer tensor as it is)", "torch.trunc(input)",
     "i = t.trunc()", kw_none},
    {"sign", LAB_CAT_TENSOR, METHOD, NONE, "sign(TENSOR)",
     "-1, 0 or 1 for every element, in its dtype", "torch.sign(input)", "s = t.sign()", kw_none},
    {"square", LAB_CAT_TENSOR, METHOD, NONE, "square(TENSOR)",
     "every element times itself (int64 for a bool tensor)", "torch.square(input)",
     "q = t.square()", kw_none},
    {"pow", LAB_CAT_TENSOR, METHOD, NONE, "pow(TENSOR, EXPONENT)  or  TENSOR ** EXPONENT",
     "every element to the power EXPONENT (a number or a tensor)", "torch.pow(input, exponent)",
     "sq = t.pow(2)", kw_none},
    /* The operators by name, as torch spells them: t.add(x) is t + x. */
    {"add", LAB_CAT_TENSOR, OPERATOR, NONE, "add(A, B, [alpha=N])  or  A.add(B)", "A + B (times N)",
     "torch.add(input, other, *, alpha=1)", "u = t.add(1)", kw_alpha},
    {"sub", LAB_CAT_TENSOR, OPERATOR, NONE, "sub(A, B, [alpha=N])  or  A.sub(B)",
     "A - B (times N); also subtract", "torch.sub(input, other, *, alpha=1)", "u = t.sub(g)",
     kw_alpha},
    {"subtract", LAB_CAT_TENSOR, OPERATOR, NONE, "subtract(A, B, [alpha=N])", "sub's other name",
     "torch.subtract(input, other, *, alpha=1)", "u = t.subtract(1)", kw_alpha},
    {"mul", LAB_CAT_TENSOR, OPERATOR, NONE, "mul(A, B)  or  A.mul(B)", "A * B; also multiply",
     "torch.mul(input, other)", "u = t.mul(2)", kw_none},
    {"multiply", LAB_CAT_TENSOR, OPERATOR, NONE, "multiply(A, B)", "mul's other name",
     "torch.multiply(input, other)", "u = t.multiply(2)", kw_none},
    {"div", LAB_CAT_TENSOR, OPERATOR, NONE, "div(A, B)  or  A.div(B)", "A / B; also divide",
     "torch.div(input, other)", "u = t.div(world_size)", kw_none},
    {"divide", LAB_CAT_TENSOR, OPERATOR, NONE, "divide(A, B)", "div's other name",
     "torch.divide(input, other)", "u = t.divide(2)", kw_none},
    {"true_divide", LAB_CAT_TENSOR, OPERATOR, NONE, "true_divide(A, B)", "A / B",
     "torch.true_divide(dividend, divisor)", "u = t.true_divide(2)", kw_none},
    {"floor_divide", LAB_CAT_TENSOR, OPERATOR, NONE, "floor_divide(A, B)", "A // B",
     "torch.floor_divide(input, other)", "u = t.floor_divide(2)", kw_none},
    {"remainder", LAB_CAT_TENSOR, OPERATOR, NONE, "remainder(A, B)", "A % B",
     "torch.remainder(input, other)", "u = t.remainder(3)", kw_none},
    {"neg", LAB_CAT_TENSOR, OPERATOR, NONE, "neg(A)  or  A.neg()", "-A; also negative",
     "torch.neg(input)", "u = t.neg()", kw_none},
    {"negative", LAB_CAT_TENSOR, OPERATOR, NONE, "negative(A)", "neg's other name",
     "torch.negative(input)", "u = t.negative()", kw_none},
    {"eq", LAB_CAT_TENSOR, OPERATOR, NONE, "eq(A, B)  or  A.eq(B)", "A == B, a bool tensor",
     "torch.eq(input, other)", "m = t.eq(0)", kw_none},
    {"ne", LAB_CAT_TENSOR, OPERATOR, NONE, "ne(A, B)", "A != B, a bool tensor",
     "torch.ne(input, other)", "m = t.ne(0)", kw_none},
    {"gt", LAB_CAT_TENSOR, OPERATOR, NONE, "gt(A, B)", "A > B, a bool tensor",
     "torch.gt(input, other)", "m = t.gt(0)", kw_none},
    {"ge", LAB_CAT_TENSOR, OPERATOR, NONE, "ge(A, B)", "A >= B, a bool tensor",
     "torch.ge(input, other)", "m = t.ge(0)", kw_none},
    {"lt", LAB_CAT_TENSOR, OPERATOR, NONE, "lt(A, B)", "A < B, a bool tensor",
     "torch.lt(input, other)", "m = t.lt(0)", kw_none},
    {"le", LAB_CAT_TENSOR, OPERATOR, NONE, "le(A, B)", "A <= B, a bool tensor",
     "torch.le(input, other)", "m = t.le(0)", kw_none},
    {"maximum", LAB_CAT_TENSOR, METHOD, NONE, "maximum(A, B)",
     "the larger of A's and B's elements (tensors, broadcast; NaN wins)",
     "torch.maximum(input, other)", "m = maximum(a, b)", kw_none},
    {"minimum", LAB_CAT_TENSOR, METHOD, NONE, "minimum(A, B)",
     "the smaller of A's and B's elements (tensors, broadcast; NaN wins)",
     "torch.minimum(input, other)", "m = minimum(a, b)", kw_none},
    {"where", LAB_CAT_TENSOR, FN, NONE, "where(CONDITION, A, B)",
     "A's element where the bool tensor CONDITION is True, else B's (tensors or numbers)",
     "torch.where(condition, input, other)", "r = where(t > 0, t, 0)", kw_none},
    {"allclose", LAB_CAT_TENSOR, METHOD, NONE,
     "allclose(A, B, [rtol=1e-05], [atol=1e-08], [equal_nan=False])",
     "whether every element of A is within atol + rtol * |B| of B's (a bool)",
     "torch.allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False)",
     "ok = torch.allclose(t, expected)", kw_close},
    {"isclose", LAB_CAT_TENSOR, METHOD, NONE,
     "isclose(A, B, [rtol=1e-05], [atol=1e-08], [equal_nan=False])",
     "allclose element by element (a bool tensor)",
     "torch.isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False)", "near = isclose(t, u)",
     kw_close},
    {"equal", LAB_CAT_TENSOR, METHOD, NONE, "equal(A, B)",
     "whether A and B have the same shape and the same values (a bool)",
     "torch.equal(input, other)", "same = torch.equal(t, u)", kw_none},
    {"clamp", LAB_CAT_TENSOR, METHOD, NONE, "clamp(TENSOR, [min=LO], [max=HI])",
     "every element held between LO and HI (either may be left out)",
     "torch.clamp(input, min=None, max=None)", "c = t.clamp(min=0)", kw_clamp},
    {"clip", LAB_CAT_TENSOR, METHOD, NONE, "clip(TENSOR, [min=LO], [max=HI])", "clamp's other name",
     "torch.clip(input, min=None, max=None)", "c = t.clip(-1, 1)", kw_clamp},
    {"matmul", LAB_CAT_TENSOR, METHOD, NONE, "matmul(A, B)  or  A @ B",
     "the matrix product of 1-D and 2-D tensors of one dtype (a dot product for two 1-D)",
     "torch.matmul(input, other)", "p = matmul(m, v)", kw_none},
    {"dot", LAB_CAT_TENSOR, OPERATOR, NONE, "dot(A, [tensor=]B)",
     "the dot product of two 1-D tensors of one dtype", "torch.dot(input, tensor)", "d = g.dot(g)",
     kw_dot},
    {"mm", LAB_CAT_TENSOR, OPERATOR, NONE, "mm(A, [mat2=]B)",
     "the matrix product of two 2-D tensors of one dtype", "torch.mm(input, mat2)", "p = x.mm(w)",
     kw_mm},
    {"norm", LAB_CAT_TENSOR, OPERATOR, NONE, "norm(TENSOR, [p=2], [dim=D], [keepdim=False])",
     "the vector norm of a float tensor (p=2 or 'fro' Euclidean, 1, inf, 0 or any other), "
     "over every dimension or those of dim",
     "torch.norm(input, p='fro', dim=None, keepdim=False)", "n = g.norm()", kw_norm},
    {"argsort", LAB_CAT_TENSOR, OPERATOR, NONE,
     "argsort(TENSOR, [dim=-1], [descending=False], [stable=False])",
     "the indices that sort the tensor along dim (sort's second tensor)",
     "torch.argsort(input, dim=-1, descending=False)", "i = t.argsort()", kw_argsort},
    {"topk", LAB_CAT_TENSOR, OPERATOR, NONE,
     "topk(TENSOR, [k=]K, [dim=-1], [largest=True], [sorted=True])",
     "the pair (values, indices) of the K largest (or smallest) elements along dim, in order",
     "torch.topk(input, k, dim=-1, largest=True, sorted=True)", "v, i = g.topk(2)", kw_topk},
    {"cumsum", LAB_CAT_TENSOR, OPERATOR, NONE, "cumsum(TENSOR, [dim=]DIM, [dtype=D])",
     "the running sums along DIM (int64 for an integer or bool tensor)",
     "torch.cumsum(input, dim, *, dtype=None)", "offsets = sizes.cumsum(0)", kw_dim_dtype},
    {"cumprod", LAB_CAT_TENSOR, OPERATOR, NONE, "cumprod(TENSOR, [dim=]DIM, [dtype=D])",
     "the running products along DIM (int64 for an integer or bool tensor)",
     "torch.cumprod(input, dim, *, dtype=None)", "p = t.cumprod(0)", kw_dim_dtype},
    {"softmax", LAB_CAT_TENSOR, OPERATOR, NONE, "softmax(TENSOR, [dim=]DIM, [dtype=D])",
     "exp(x) / sum(exp(x)) along DIM, of a float tensor", "torch.softmax(input, dim, dtype=None)",
     "p = logits.softmax(dim=-1)", kw_dim_dtype},
    {"log_softmax", LAB_CAT_TENSOR, OPERATOR, NONE, "log_softmax(TENSOR, [dim=]DIM, [dtype=D])",
     "the log of softmax along DIM, of a float tensor", "torch.log_softmax(input, dim, dtype=None)",
     "lp = logits.log_softmax(-1)", kw_dim_dtype},
    {"t", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.t()",
     "the transpose of a 2-D tensor (a copy); a vector or a number as it is", "Tensor.t()",
     "u = m.t()", kw_none},
    {"transpose", LAB_CAT_TENSOR, METHOD, NONE, "transpose(TENSOR, [dim0=]A, [dim1=]B)",
     "the tensor with two dimensions swapped (a copy)", "torch.transpose(input, dim0, dim1)",
     "u = x.transpose(0, 1)", kw_transpose},
    {"permute", LAB_CAT_TENSOR, METHOD, NONE, "permute(TENSOR, DIMS)",
     "the tensor with its dimensions in the order DIMS gives (a copy)",
     "torch.permute(input, dims)", "u = x.permute(2, 0, 1)", kw_none},
    {"T", LAB_CAT_TENSOR, ONLY | LAB_CMD_ATTRIBUTE, NONE, "TENSOR.T",
     "the transpose of a 2-D tensor (a copy)", "Tensor.T", "u = m.T", kw_none},
    {"data", LAB_CAT_TENSOR, ONLY | LAB_CMD_ATTRIBUTE, NONE, "TENSOR.data",
     "the tensor itself, as torch's t.data (the same memory): t.data -= lr * g writes into t",
     "Tensor.data", "p.data -= 0.1 * g", kw_none},
    {"shape", LAB_CAT_TENSOR, ONLY | LAB_CMD_ATTRIBUTE, NONE, "TENSOR.shape",
     "the tensor's sizes, as torch.Size([D, ...]); t.shape[0] is the first", "Tensor.shape",
     "n = x.shape[0]", kw_none},
    {"size", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.size([dim])",
     "the tensor's sizes as t.shape, or the size of dimension dim", "Tensor.size(dim=None)",
     "n = x.size(0)", kw_none},
    {"reshape", LAB_CAT_TENSOR, METHOD, NONE, "reshape(TENSOR, SHAPE)  or  TENSOR.reshape(D, ...)",
     "the elements in a new shape (one size may be -1)", "torch.reshape(input, shape)",
     "m = t.reshape(2, 3)", kw_none},
    {"view", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.view(D, ...)",
     "the elements in a new shape, as reshape (a copy: assignment copies here)",
     "Tensor.view(*shape)", "m = t.view(2, -1)", kw_none},
    {"flatten", LAB_CAT_TENSOR, METHOD, NONE, "flatten(TENSOR, [start_dim=0], [end_dim=-1])",
     "the dimensions from start_dim to end_dim made one",
     "torch.flatten(input, start_dim=0, "
     "end_dim=-1)",
     "v = m.flatten()", kw_flatten},
    {"squeeze", LAB_CAT_TENSOR, METHOD, NONE, "squeeze(TENSOR, [dim=D])",
     "the dimensions of size 1 removed (or dim, if its size is 1)", "torch.squeeze(input, dim)",
     "v = m.squeeze()", kw_dim},
    {"unsqueeze", LAB_CAT_TENSOR, METHOD, NONE, "unsqueeze(TENSOR, dim=D)",
     "a dimension of size 1 inserted at dim", "torch.unsqueeze(input, dim)", "row = t.unsqueeze(0)",
     kw_dim},
    {"clone", LAB_CAT_TENSOR, METHOD, NONE, "clone(TENSOR)", "a copy of the tensor",
     "torch.clone(input)", "c = t.clone()", kw_none},
    {"detach", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.detach()",
     "a copy (torch's shares the storage; the shell's tensors have no gradient to leave)",
     "Tensor.detach()", "l = loss.detach()", kw_none},
    {"contiguous", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.contiguous()",
     "a copy (every tensor of the shell is contiguous)", "Tensor.contiguous()",
     "c = t.T.contiguous()", kw_none},
    {"item", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.item()", "the one element of a tensor as a number",
     "Tensor.item()", "x = t[0].item()", kw_none},
    {"tolist", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.tolist()",
     "the elements as (nested) lists of Python numbers", "Tensor.tolist()", "v = t.tolist()",
     kw_none},
    {"dtype", LAB_CAT_TENSOR, ONLY | LAB_CMD_ATTRIBUTE, NONE, "TENSOR.dtype",
     "the tensor's dtype, torch.float32 say, which dtype= and to() take", "Tensor.dtype",
     "z = zeros(2, dtype=t.dtype)", kw_none},
    {"device", LAB_CAT_TENSOR, ONLY | LAB_CMD_ATTRIBUTE, NONE, "TENSOR.device",
     "where the tensor lives, 'cpu' or 'cuda:N', which device= and to() take", "Tensor.device",
     "z = zeros(2, device=t.device)", kw_none},
    {"is_cuda", LAB_CAT_TENSOR, ONLY | LAB_CMD_ATTRIBUTE, NONE, "TENSOR.is_cuda",
     "True for a tensor on a GPU", "Tensor.is_cuda", "g = t.is_cuda", kw_none},
    {"ndim", LAB_CAT_TENSOR, ONLY | LAB_CMD_ATTRIBUTE, NONE, "TENSOR.ndim",
     "the number of dimensions (t.dim() too)", "Tensor.ndim", "n = t.ndim", kw_none},
    {"dim", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.dim()", "the number of dimensions", "Tensor.dim()",
     "n = t.dim()", kw_none},
    {"numel", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.numel()", "the number of elements",
     "Tensor.numel()", "n = t.numel()", kw_none},
    {"to", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.to(DEVICE | DTYPE, ..., [dtype=D], [device=V])",
     "a copy on another device ('cuda', 'cuda:N', a GPU's number, 'cpu') or of another dtype",
     "Tensor.to(device=None, dtype=None)", "g = t.to(rank)", kw_to},
    {"cuda", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.cuda([N])",
     "a copy on this rank's GPU (cuda:N must be it)", "Tensor.cuda(device=None)", "g = t.cuda()",
     kw_none},
    {"cpu", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.cpu()", "a copy in host memory", "Tensor.cpu()",
     "h = g.cpu()", kw_none},
    {"double", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.double()",
     "a float64 copy (see also half, bfloat16, long, bool, float and int)", "Tensor.double()",
     "d = t.double()", kw_none},
    {"half", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.half()", "a float16 copy", "Tensor.half()",
     "h = t.half()", kw_none},
    {"bfloat16", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.bfloat16()", "a bfloat16 copy",
     "Tensor.bfloat16()", "b = t.bfloat16()", kw_none},
    {"long", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.long()", "an int64 copy (floats towards zero)",
     "Tensor.long()", "n = t.long()", kw_none},
    {"bool", LAB_CAT_TENSOR, METHOD, NONE, "bool(VALUE)  or  TENSOR.bool()",
     "whether VALUE is true, as if and while read it (a tensor of one element by its value); "
     "t.bool() is a bool copy (True where not 0)",
     "bool(x), Tensor.bool()", "m = t.bool()", kw_none},
    /* In place, as statements: the parser makes t.add_(x) the t += x it is. */
    {"add_", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.add_(X, [alpha=A])",
     "adds X (times A) into the tensor in place, as t += X (also sub_, mul_, div_)",
     "Tensor.add_(other, *, alpha=1)", "t.add_(g, alpha=-0.1)", kw_alpha},
    {"sub_", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.sub_(X, [alpha=A])", "t -= X (times A), in place",
     "Tensor.sub_(other, *, alpha=1)", "t.sub_(1)", kw_alpha},
    {"mul_", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.mul_(X)", "t *= X, in place", "Tensor.mul_(other)",
     "t[0:2].mul_(2)", kw_none},
    {"div_", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.div_(X)",
     "t /= X, in place (grad.div_(world_size) averages)", "Tensor.div_(other)",
     "t.div_(world_size)", kw_none},
    {"zero_", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.zero_()", "sets every element to 0, in place",
     "Tensor.zero_()", "t.zero_()", kw_none},
    {"fill_", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.fill_(V)",
     "sets every element to V (cast to the tensor's dtype), in place", "Tensor.fill_(value)",
     "t.fill_(rank)", kw_none},
    {"copy_", LAB_CAT_TENSOR, ONLY, NONE, "TENSOR.copy_(SRC)",
     "copies SRC into the tensor (broadcast, cast to its dtype), in place", "Tensor.copy_(src)",
     "t.copy_(u)", kw_none},
    {"cat", LAB_CAT_TENSOR, FN, NONE, "cat(LIST, [dim=0])",
     "the tensors of LIST one after the other along dim (dtypes promoted)",
     "torch.cat(tensors, dim=0)", "c = cat([t, t])", kw_dim},
    {"stack", LAB_CAT_TENSOR, FN, NONE, "stack(LIST, [dim=0])",
     "the tensors of LIST, of one shape, along a new dimension dim", "torch.stack(tensors, dim=0)",
     "s = stack([t, t])", kw_dim},
    {"chunk", LAB_CAT_TENSOR, METHOD, NONE, "chunk(TENSOR, CHUNKS, [dim=0])",
     "a list of at most CHUNKS pieces of equal size along dim (the last may be smaller)",
     "torch.chunk(input, chunks, dim=0)", "parts = t.chunk(2)", kw_dim},
    {"split", LAB_CAT_TENSOR, METHOD, NONE, "split(TENSOR, SIZE | [SIZES], [dim=0])",
     "a list of pieces of SIZE elements along dim, or of the sizes listed",
     "torch.split(tensor, split_size_or_sections, dim=0)", "parts = split(t, [1, 3])", kw_dim},

    /* ---- point-to-point ---- */
    {"send", LAB_CAT_P2P, 0, NONE, "send TENSOR dst=RANK [group=G] [tag=0]",
     "send TENSOR to rank dst and wait until it is sent",
     "torch.distributed.send(tensor, dst, group=None, tag=0)", "on 0: send t dst=1", kw_send},
    {"recv", LAB_CAT_P2P, 0, NONE, "recv TENSOR [src=RANK] [group=G] [tag=0]",
     "receive into TENSOR from rank src (any rank when src is not given)",
     "torch.distributed.recv(tensor, src=None, group=None, tag=0)", "on 1: recv t src=0", kw_recv},
    {"isend", LAB_CAT_P2P, 0, NONE, "H = isend TENSOR dst=RANK [group=G] [tag=0]",
     "start sending TENSOR to rank dst; returns a handle to wait on",
     "torch.distributed.isend(tensor, dst, group=None, tag=0)", "on 0: h = isend t dst=1", kw_send},
    {"irecv", LAB_CAT_P2P, 0, NONE, "H = irecv TENSOR [src=RANK] [group=G] [tag=0]",
     "start receiving into TENSOR from rank src; returns a handle to wait on",
     "torch.distributed.irecv(tensor, src=None, group=None, tag=0)", "on 1: h = irecv t src=0",
     kw_recv},
    {"P2POp", LAB_CAT_P2P, FN, NONE,
     "P2POp([op=]OP, [tensor=]TENSOR, [peer=]PEER, [group=G], [tag=0])",
     "an isend or irecv for batch_isend_irecv: OP is dist.isend or dist.irecv",
     "torch.distributed.P2POp(op, tensor, peer, group=None, tag=0)", "op = P2POp(dist.isend, t, 1)",
     kw_p2pop},
    {"batch_isend_irecv", LAB_CAT_P2P, 0, NONE, "batch_isend_irecv(OPS)",
     "post every P2POp of the list OPS; returns their handles, a list to wait on",
     "torch.distributed.batch_isend_irecv(p2p_op_list)", "reqs = batch_isend_irecv([op])", kw_none},
    {"wait", LAB_CAT_P2P, LAB_CMD_OBJECT_METHOD, NONE, "wait HANDLE  or  HANDLE.wait()",
     "wait until the operation behind HANDLE (isend, irecv, async_op=true) completes",
     "torch.distributed.Work.wait()", "wait h", kw_none},
    {"is_completed", LAB_CAT_P2P, LIST_METHOD, NONE, "HANDLE.is_completed()",
     "True once the operation behind HANDLE has finished; never waits",
     "torch.distributed.Work.is_completed()", "done = h.is_completed()", kw_none},

    /* ---- collectives ---- */
    {"broadcast", LAB_CAT_COLLECTIVE, 0, NONE,
     "broadcast TENSOR src=RANK [group=G] [async_op=false]",
     "copy rank src's TENSOR into TENSOR on every rank",
     "torch.distributed.broadcast(tensor, src, group=None, async_op=False)", "broadcast t src=0",
     kw_broadcast},
    {"scatter", LAB_CAT_COLLECTIVE, 0, NONE,
     "scatter TENSOR src=RANK [scatter_list=LIST] [group=G] [async_op=false]",
     "rank src sends the i-th tensor of scatter_list to rank i, into TENSOR",
     "torch.distributed.scatter(tensor, scatter_list=None, src=0, group=None, async_op=False)",
     "scatter t src=0 scatter_list=[a, b, c, d]", kw_scatter},
    {"gather", LAB_CAT_COLLECTIVE, 0, NONE,
     "gather TENSOR dst=RANK [gather_list=OUT] [group=G] [async_op=false]",
     "rank dst receives every rank's TENSOR, in rank order, into gather_list",
     "torch.distributed.gather(tensor, gather_list=None, dst=0, group=None, async_op=False)",
     "gather t dst=0 gather_list=out", kw_gather},
    {"reduce", LAB_CAT_COLLECTIVE, 0, NONE,
     "reduce TENSOR dst=RANK [op=sum] [group=G] [async_op=false]",
     "combine every rank's TENSOR with op into TENSOR on rank dst",
     "torch.distributed.reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False)",
     "reduce t dst=3 op=sum", kw_reduce},
    {"all_gather", LAB_CAT_COLLECTIVE, 0, NONE, "all_gather OUT TENSOR [group=G] [async_op=false]",
     "every rank receives every rank's TENSOR, in rank order, into OUT",
     "torch.distributed.all_gather(tensor_list, tensor, group=None, async_op=False)",
     "all_gather out t", kw_group},
    {"all_reduce", LAB_CAT_COLLECTIVE, 0, NONE,
     "all_reduce TENSOR [op=sum] [group=G] [async_op=false]",
     "combine every rank's TENSOR with op and leave the result on every rank",
     "torch.distributed.all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False)",
     "all_reduce t op=max", kw_op_group},
    {"reduce_scatter", LAB_CAT_COLLECTIVE, 0, NONE,
     "reduce_scatter OUT IN [op=sum] [group=G] [async_op=false]",
     "combine every rank's IN with op; rank i keeps chunk i of the result in OUT",
     "torch.distributed.reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, "
     "async_op=False)",
     "reduce_scatter out in op=sum", kw_op_group},
    {"all_to_all", LAB_CAT_COLLECTIVE, 0, NONE, "all_to_all OUT IN [group=G] [async_op=false]",
     "chunk j of IN on rank i goes to chunk i of OUT on rank j (a transpose)",
     "torch.distributed.all_to_all(output_tensor_list, input_tensor_list, group=None, "
     "async_op=False)",
     "all_to_all out in", kw_group},
    /* torch's one-tensor spellings */
    {"all_gather_into_tensor", LAB_CAT_COLLECTIVE, 0, NONE,
     "all_gather_into_tensor OUT TENSOR [group=G] [async_op=false]",
     "every rank's TENSOR, in rank order, into the one tensor OUT (world_size times as long)",
     "torch.distributed.all_gather_into_tensor(output_tensor, input_tensor, group=None, "
     "async_op=False)",
     "all_gather_into_tensor out t", kw_group},
    {"reduce_scatter_tensor", LAB_CAT_COLLECTIVE, 0, NONE,
     "reduce_scatter_tensor OUT IN [op=sum] [group=G] [async_op=false]",
     "reduce_scatter with IN one tensor: rank i keeps chunk i of the reduced IN in OUT",
     "torch.distributed.reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, "
     "async_op=False)",
     "reduce_scatter_tensor out in", kw_op_group},
    {"all_to_all_single", LAB_CAT_COLLECTIVE, 0, NONE,
     "all_to_all_single OUT IN [output_split_sizes=[...]] [input_split_sizes=[...]] [group=G] "
     "[async_op=false]",
     "all_to_all of one tensor: chunk j of IN on rank i goes to chunk i of OUT on rank j, equal "
     "chunks or rows of dim 0 as the split sizes say",
     "torch.distributed.all_to_all_single(output, input, output_split_sizes=None, "
     "input_split_sizes=None, group=None, async_op=False)",
     "all_to_all_single out in", kw_a2a_single},
    /* torch's object collectives: any value that can be sent (numbers,
     * strings, None, tensors, lists and tuples of them) */
    {"all_gather_object", LAB_CAT_COLLECTIVE, 0, NONE, "all_gather_object OUT OBJ [group=G]",
     "every rank's OBJ, in rank order, into the list OUT (one item for each rank)",
     "torch.distributed.all_gather_object(object_list, obj, group=None)",
     "all_gather_object out rank", kw_group_only},
    {"gather_object", LAB_CAT_COLLECTIVE, 0, NONE,
     "gather_object OBJ [object_gather_list=OUT] [dst=RANK] [group=G]",
     "rank dst receives every rank's OBJ, in rank order, into the list object_gather_list",
     "torch.distributed.gather_object(obj, object_gather_list=None, dst=0, group=None)",
     "gather_object rank dst=0 object_gather_list=out", kw_gather_object},
    {"broadcast_object_list", LAB_CAT_COLLECTIVE, 0, NONE,
     "broadcast_object_list LIST [src=RANK] [group=G] [device=D]",
     "rank src's LIST items replace every other rank's (as many on each rank)",
     "torch.distributed.broadcast_object_list(object_list, src=0, group=None, device=None)",
     "broadcast_object_list objs src=0", kw_src_group_device},
    {"scatter_object_list", LAB_CAT_COLLECTIVE, 0, NONE,
     "scatter_object_list OUT IN [src=RANK] [group=G]",
     "item i of rank src's list IN becomes the first item of rank i's list OUT",
     "torch.distributed.scatter_object_list(scatter_object_output_list, "
     "scatter_object_input_list, src=0, group=None)",
     "scatter_object_list out objs src=0", kw_src_group},
    {"barrier", LAB_CAT_COLLECTIVE, 0, NONE, "barrier [group=G] [async_op=false]",
     "wait until every rank of the group has reached the barrier",
     "torch.distributed.barrier(group=None, async_op=False, device_ids=None)", "barrier", kw_group},
    {"new_group", LAB_CAT_COLLECTIVE, FN, NONE, "new_group([ranks=]RANKS)",
     "a group of the listed ranks, for group=; every rank must create it",
     "torch.distributed.new_group(ranks=None, timeout=None, backend=None, pg_options=None)",
     "g = new_group([0, 2])", kw_new_group},
    {"get_rank", LAB_CAT_COLLECTIVE, FN, NONE, "get_rank([group=G])",
     "this rank's number in the world (as rank), or in group G (-1 outside it)",
     "torch.distributed.get_rank(group=None)", "r = get_rank()", kw_group_only},
    {"get_world_size", LAB_CAT_COLLECTIVE, FN, NONE, "get_world_size([group=G])",
     "the number of ranks in the world (as world_size), or in group G (-1 outside it)",
     "torch.distributed.get_world_size(group=None)", "n = get_world_size()", kw_group_only},

    /* ---- session ---- */
    {"ranks", LAB_CAT_SESSION, RAW | SESSION | WORLD | PAUSED, LAB_CMD_ID_RANKS, "ranks",
     "show every rank's pid, host and state", NULL, "ranks", kw_none},
    {"kill", LAB_CAT_SESSION, RAW | SESSION | WORLD | PAUSED, LAB_CMD_ID_KILL, "kill RANK",
     "kill a rank's process, to see how the others notice", NULL, "kill 2", kw_none},
    {"respawn", LAB_CAT_SESSION, RAW | SESSION, LAB_CMD_ID_RESPAWN, "respawn",
     "restart every rank with the same world size: tensors are lost, settings are kept", NULL,
     "respawn", kw_none},
    {"spawn", LAB_CAT_SESSION, RAW | SESSION, LAB_CMD_ID_SPAWN, "spawn N",
     "restart the world with N ranks: tensors are lost, settings are kept", NULL, "spawn 8",
     kw_none},
    {"set", LAB_CAT_SESSION, RAW | SESSION | WORLD, LAB_CMD_ID_SET,
     "set [algo COLLECTIVE ALGORITHM | timeout SECONDS | check on|off | echo on|off|print]",
     "change a setting: a collective's algorithm, the timeout, collective fingerprint checks, "
     "what prints (echo off: not what assignments bound; print: only print); alone, show "
     "every setting",
     NULL, "set algo all_reduce ring", kw_none},
    {"explain", LAB_CAT_SESSION, RAW | SESSION | WORLD | PAUSED, LAB_CMD_ID_EXPLAIN,
     "explain COLLECTIVE [TENSOR | COUNT] [ALGORITHM[,ALGORITHM...]] [np=N[,N...]]",
     "show the schedule a collective would run on this world, for a tensor's size and dtype "
     "and the algorithm set: steps, messages, bytes and cost; lists of algorithms or world "
     "sizes compare them, a row each",
     NULL, "explain all_reduce t direct,ring np=2,4,8", kw_none},
    {"trace", LAB_CAT_SESSION, RAW | SESSION | WORLD, LAB_CMD_ID_TRACE, "trace [on FILE | off]",
     "record every collective's steps and messages, and write them to FILE as a trace that "
     "ui.perfetto.dev and chrome://tracing open (off, or quitting, writes it); alone, say "
     "whether it is on",
     NULL, "trace on ring.json", kw_none},
    {"history", LAB_CAT_SESSION, RAW | SESSION | PAUSED, LAB_CMD_ID_HISTORY, "history",
     "list the lines entered so far", NULL, "history", kw_none},
    {"source", LAB_CAT_SESSION, RAW | SESSION, LAB_CMD_ID_SOURCE, "source FILE",
     "run the lines of FILE, stopping at the first error", NULL, "source ~/exercises/ring.dl",
     kw_none},
    {"help", LAB_CAT_SESSION, RAW | SESSION | PAUSED, LAB_CMD_ID_HELP, "help [COMMAND]",
     "list the commands, or show one with torch's signature and an example", NULL,
     "help all_reduce", kw_none},
    {"tui", LAB_CAT_SESSION, RAW | SESSION | PAUSED, LAB_CMD_ID_TUI, "tui",
     "show the ranks in the terminal view, a panel per rank with its tensors; q comes back", NULL,
     "tui", kw_none},
    {"clear", LAB_CAT_SESSION, RAW | SESSION | PAUSED, LAB_CMD_ID_CLEAR, "clear",
     "clear the screen", NULL, "clear", kw_none},
    {"quit", LAB_CAT_SESSION, RAW | SESSION | PAUSED, LAB_CMD_ID_QUIT, "quit",
     "stop every rank and leave the shell", NULL, "quit", kw_none},
    {"exit", LAB_CAT_SESSION, RAW | SESSION | PAUSED, LAB_CMD_ID_EXIT, "exit",
     "stop every rank and leave the shell (as quit)", NULL, "exit", kw_none},

    /* ---- step mode ---- */
    {"step", LAB_CAT_STEP, RAW | SESSION | WORLD | PAUSED, LAB_CMD_ID_STEP, "step on|off",
     "stop before each schedule step of the next collectives (on), or run them whole (off)", NULL,
     "step on", kw_none},
    {"next", LAB_CAT_STEP, RAW | SESSION | WORLD | PAUSED, LAB_CMD_ID_NEXT, "next",
     "run one step of the stopped collective and show what moved", NULL, "next", kw_none},
    {"continue", LAB_CAT_STEP, RAW | SESSION | WORLD | PAUSED, LAB_CMD_ID_CONTINUE, "continue",
     "run the stopped collective to its end", NULL, "continue", kw_none},
    {"back", LAB_CAT_STEP, RAW | SESSION | PAUSED, LAB_CMD_ID_BACK, "back",
     "show the previous recorded step again, without running anything", NULL, "back", kw_none},
    {"forward", LAB_CAT_STEP, RAW | SESSION | PAUSED, LAB_CMD_ID_FORWARD, "forward",
     "show the next recorded step, without running anything", NULL, "forward", kw_none},
};

#undef FN
#undef RAW
#undef SESSION
#undef WORLD
#undef PAUSED
#undef NONE
#undef METHOD
#undef ONLY
#undef PAIR_ATTR

#define TABLE_LEN (sizeof(table) / sizeof(table[0]))

/* What `set` sets; the evaluator owns their meaning. */
static const char *const set_keys[] = {"algo", "timeout", "check", "echo", NULL};
static const char *const echo_words[] = {"on", "off", "print", NULL};
static const char *const on_off[] = {"on", "off", NULL};
static const char *const booleans[] = {"true", "false", NULL};
static const char *const devices[] = {"cpu", "cuda", NULL};
/* Names every rank knows without defining them. */
static const char *const builtins[] = {"rank", "world_size", NULL};

/* torch's positional parameters of the rank commands, in its order. In the
 * call form the first nargs stay positional (the tensors the command works
 * on) and may also be given by name, send(tensor=t, dst=1); a positional
 * argument after them binds to its parameter's name, send(t, 1) being
 * send(t, dst=1), as Python binds torch.distributed's arguments. */
static const struct {
    const char *name;
    size_t nargs;
    const char *params[7];
} cmd_params[] = {
    {"send", 1, {"tensor", "dst", "group", "tag", NULL}},
    {"isend", 1, {"tensor", "dst", "group", "tag", NULL}},
    {"recv", 1, {"tensor", "src", "group", "tag", NULL}},
    {"irecv", 1, {"tensor", "src", "group", "tag", NULL}},
    {"broadcast", 1, {"tensor", "src", "group", "async_op", NULL}},
    {"all_reduce", 1, {"tensor", "op", "group", "async_op", NULL}},
    {"reduce", 1, {"tensor", "dst", "op", "group", "async_op", NULL}},
    {"scatter", 1, {"tensor", "scatter_list", "src", "group", "async_op", NULL}},
    {"gather", 1, {"tensor", "gather_list", "dst", "group", "async_op", NULL}},
    {"all_gather", 2, {"tensor_list", "tensor", "group", "async_op", NULL}},
    {"reduce_scatter", 2, {"output", "input_list", "op", "group", "async_op", NULL}},
    {"all_to_all", 2, {"output_tensor_list", "input_tensor_list", "group", "async_op", NULL}},
    {"barrier", 0, {"group", "async_op", NULL}},
    {"all_gather_into_tensor", 2, {"output_tensor", "input_tensor", "group", "async_op", NULL}},
    {"reduce_scatter_tensor", 2, {"output", "input", "op", "group", "async_op", NULL}},
    {"batch_isend_irecv", 1, {"p2p_op_list", NULL}},
    {"all_gather_object", 2, {"object_list", "obj", "group", NULL}},
    {"gather_object", 1, {"obj", "object_gather_list", "dst", "group", NULL}},
    {"broadcast_object_list", 1, {"object_list", "src", "group", "device", NULL}},
    {"scatter_object_list",
     2,
     {"scatter_object_output_list", "scatter_object_input_list", "src", "group", NULL}},
    {"all_to_all_single",
     2,
     {"output", "input", "output_split_sizes", "input_split_sizes", "group", "async_op", NULL}},
};

const char *const *lab__cmd_params(const lab_cmd_t *cmd, size_t *nargs_p)
{
    for (size_t i = 0; cmd != NULL && i < sizeof(cmd_params) / sizeof(cmd_params[0]); i++) {
        if (strcmp(cmd_params[i].name, cmd->name) == 0) {
            *nargs_p = cmd_params[i].nargs;
            return cmd_params[i].params;
        }
    }
    *nargs_p = 0;
    return NULL;
}

const lab_cmd_t *lab__cmd_findn(const char *name, size_t len)
{
    for (size_t i = 0; i < TABLE_LEN; i++)
        if (strlen(table[i].name) == len && memcmp(table[i].name, name, len) == 0)
            return &table[i];
    return NULL;
}

/* l.clear() and d.clear(), a method named as the shell's clear command
 * (the table holds each name once): found by lab__cmd_find_method only. */
static const lab_cmd_t clear_method = {
    "clear",         LAB_CAT_TENSOR, LAB_CMD_FUNCTION | LAB_CMD_METHOD_ONLY | LAB_CMD_OBJECT_METHOD,
    LAB_CMD_ID_NONE, "LIST.clear()", "removes every item of a list or a dict, in place",
    "list.clear()",  "d.clear()",    kw_none};

const lab_cmd_t *lab__cmd_find_method(const char *name, size_t len)
{
    const lab_cmd_t *c = lab__cmd_findn(name, len);
    if (c != NULL && (c->flags & (LAB_CMD_METHOD | LAB_CMD_OBJECT_METHOD)))
        return c;
    return len == 5 && memcmp(name, "clear", 5) == 0 ? &clear_method : c;
}

const lab_cmd_t *lab_cmd_find(const char *name)
{
    return name != NULL ? lab__cmd_findn(name, strlen(name)) : NULL;
}

const lab_cmd_t *lab_cmd_all(size_t *n_p)
{
    if (n_p != NULL)
        *n_p = TABLE_LEN;
    return table;
}

const char *lab_cmd_category_name(lab_cmd_category_t cat)
{
    static const char *const names[LAB_CAT__COUNT] = {
        [LAB_CAT_TENSOR] = "tensor",
        [LAB_CAT_P2P] = "point-to-point",
        [LAB_CAT_COLLECTIVE] = "collective",
        [LAB_CAT_SESSION] = "session",
        [LAB_CAT_STEP] = "step",
    };
    return (unsigned)cat < LAB_CAT__COUNT ? names[cat] : "unknown";
}

bool lab_cmd_has_keyword(const lab_cmd_t *cmd, const char *kw)
{
    if (cmd == NULL || kw == NULL)
        return false;
    for (const char *const *k = cmd->keywords; *k != NULL; k++)
        if (strcmp(*k, kw) == 0)
            return true;
    return false;
}

bool lab_lang_is_session(const char *name)
{
    const lab_cmd_t *c = lab_cmd_find(name);
    return c != NULL && (c->flags & LAB_CMD_SESSION);
}

const lab_cmd_t *lab_stmt_session_cmd(const json_t *stmt)
{
    const json_t *cmd = json_object_get(stmt, "command");
    const lab_cmd_t *c = lab_cmd_find(json_string_value(json_object_get(cmd, "cmd")));
    return c != NULL && (c->flags & LAB_CMD_SESSION) ? c : NULL;
}

/* The name an expression node is, or NULL (a list literal, a call). */
static const char *expr_name(const json_t *expr)
{
    return json_string_value(json_object_get(expr, "name"));
}

/* The names of an unpacking's targets, groups walked depth first, after
 * the n in names already; how many there are then. */
static size_t unpacked_names(const json_t *targets, const char *names[LAB_STMT_MAX_DEFINED],
                             size_t n)
{
    for (size_t i = 0; i < json_array_size(targets) && n < LAB_STMT_MAX_DEFINED; i++) {
        const json_t *t = json_array_get(targets, i);
        if (json_is_object(t)) /* *rest */
            t = json_object_get(t, "star");
        if (json_is_string(t))
            names[n++] = json_string_value(t);
        else
            n = unpacked_names(t, names, n);
    }
    return n;
}

size_t lab_stmt_defined_names(const json_t *stmt, const char *names[LAB_STMT_MAX_DEFINED])
{
    size_t n = 0;
    const char *kind = json_string_value(json_object_get(stmt, "kind"));
    const char *assigned = json_string_value(json_object_get(stmt, "name"));
    if (kind != NULL && (strcmp(kind, "assign") == 0 || strcmp(kind, "def") == 0) &&
        assigned != NULL)
        names[n++] = assigned;
    /* a, (b, c) = ...: the first names, as many as fit. */
    n = unpacked_names(json_object_get(stmt, "names"), names, n);
    const json_t *cmd = json_object_get(stmt, "command");
    const char *cmd_name = json_string_value(json_object_get(cmd, "cmd"));
    if (cmd_name == NULL || lab_stmt_session_cmd(stmt) != NULL)
        return n;
    /* The evaluator creates the output list of a gather and of all_gather,
     * and the output of reduce_scatter and all_to_all, when it does not
     * exist yet (lab/rank/eval_cmd.c). */
    const char *out = expr_name(json_object_get(json_object_get(cmd, "kwargs"), "gather_list"));
    if (out != NULL)
        names[n++] = out;
    out = strcmp(cmd_name, "all_gather") == 0 || strcmp(cmd_name, "reduce_scatter") == 0 ||
                  strcmp(cmd_name, "all_to_all") == 0 ||
                  strcmp(cmd_name, "reduce_scatter_tensor") == 0 ||
                  strcmp(cmd_name, "all_to_all_single") == 0
              ? expr_name(json_array_get(json_object_get(cmd, "args"), 0))
              : NULL;
    if (out != NULL)
        names[n++] = out;
    return n;
}

dl_status_t lab_lang_print_help(FILE *out, const char *name)
{
    if (out == NULL)
        return DL_ERR_INVALID;
    if (name == NULL) {
        for (int cat = 0; cat < LAB_CAT__COUNT; cat++) {
            fprintf(out, "%s%s:\n", cat > 0 ? "\n" : "",
                    lab_cmd_category_name((lab_cmd_category_t)cat));
            for (size_t i = 0; i < TABLE_LEN; i++)
                if (table[i].category == (lab_cmd_category_t)cat)
                    fprintf(out, "  %-15s %s\n", table[i].name, table[i].summary);
        }
        fprintf(out, "\n'help NAME' shows a command's usage, torch's signature and an example.\n");
        return DL_OK;
    }
    const lab_cmd_t *c = lab_cmd_find(name);
    if (c == NULL)
        return DL_ERR_NOT_FOUND;
    fprintf(out, "%s\n  %s\n", c->usage, c->summary);
    if (c->torch != NULL)
        fprintf(out, "  torch:   %s\n", c->torch);
    fprintf(out, "  example: %s\n", c->example);
    return DL_OK;
}

/* ======================================================================
 * Suggestions for typos
 * ====================================================================== */

/* Levenshtein distance, or a value above limit as soon as it is certain to
 * exceed it. Candidates are short table names, so one row fits the stack;
 * the typed name may be as long as the line, hence the length check first. */
static size_t edit_distance(const char *a, const char *b, size_t limit)
{
    size_t la = strlen(a), lb = strlen(b);
    if (lb >= 64 || (la > lb ? la - lb : lb - la) > limit)
        return limit + 1;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *lab_suggest(const char *name, const char *const *cands, size_t n)
{
    /* One edit for short names, two for longer ones: "snd" -> "send",
     * "all_reduc" -> "all_reduce", but "t" suggests nothing. */
    size_t limit = strlen(name) <= 3 ? 1 : 2;
    const char *best = NULL;
    size_t best_d = limit + 1;
    for (size_t i = 0; n == SIZE_MAX ? cands[i] != NULL : i < n; i++) {
        size_t d = edit_distance(name, cands[i], limit);
        if (d < best_d) {
            best = cands[i];
            best_d = d;
        }
    }
    return best;
}

const char *lab__suggest_command(const char *name)
{
    const char *names[TABLE_LEN];
    size_t n = 0;
    for (size_t i = 0; i < TABLE_LEN; i++)
        if (!(table[i].flags & LAB_CMD_FUNCTION))
            names[n++] = table[i].name;
    return lab_suggest(name, names, n);
}

/* ======================================================================
 * Completion
 *
 * The part of the line before the word being completed is lexed again,
 * statement by statement, the way the parser would (word mode after a
 * raw-word command), but nothing is required to be valid: half-typed lines
 * are the normal case. Only the last statement matters. Its tokens are then
 * read backwards for the nearest context that decides what fits: a keyword
 * just before '=', the innermost unclosed bracket, or the command.
 * ====================================================================== */

typedef struct {
    char **v;
    size_t n, cap;
    bool nomem;
    const char *word; /* the prefix every match must start with */
    size_t word_len;
} matches_t;

static void add_match(matches_t *m, const char *cand, const char *suffix)
{
    if (m->nomem || strncmp(cand, m->word, m->word_len) != 0)
        return;
    if (m->n == m->cap) {
        size_t cap = m->cap != 0 ? m->cap * 2 : 16;
        char **v = realloc(m->v, cap * sizeof(*v));
        if (v == NULL) {
            m->nomem = true;
            return;
        }
        m->v = v;
        m->cap = cap;
    }
    size_t a = strlen(cand), b = strlen(suffix);
    char *s = malloc(a + b + 1);
    if (s == NULL) {
        m->nomem = true;
        return;
    }
    memcpy(s, cand, a);
    memcpy(s + a, suffix, b + 1);
    m->v[m->n++] = s;
}

static void add_list(matches_t *m, const char *const *list)
{
    for (; *list != NULL; list++)
        add_match(m, *list, "");
}

static void add_commands(matches_t *m, bool with_functions, bool with_raw)
{
    for (size_t i = 0; i < TABLE_LEN; i++) {
        if ((table[i].flags & LAB_CMD_FUNCTION) && !with_functions)
            continue;
        if (table[i].flags & LAB_CMD_METHOD_ONLY)
            continue;
        if ((table[i].flags & LAB_CMD_RAW_WORDS) && !with_raw)
            continue;
        add_match(m, table[i].name, "");
    }
}

static void add_functions(matches_t *m)
{
    for (size_t i = 0; i < TABLE_LEN; i++)
        if ((table[i].flags & LAB_CMD_FUNCTION) && !(table[i].flags & LAB_CMD_METHOD_ONLY))
            add_match(m, table[i].name, "");
}

static void add_collectives(matches_t *m)
{
    for (int c = 0; c < DL_COLL__COUNT; c++)
        add_match(m, dl_coll_name((dl_coll_t)c), "");
}

/* Where a value goes: the caller's names, rank and world_size, and the
 * functions that make tensors. */
static void add_values(matches_t *m, const char *const *names, size_t n_names)
{
    for (size_t i = 0; i < n_names; i++)
        if (names[i] != NULL)
            add_match(m, names[i], "");
    add_list(m, builtins);
    add_functions(m);
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The tokens of the statement that holds the cursor. */
typedef struct {
    lab__tok_t *v;
    size_t n, cap;
} toks_t;

static bool push_tok(toks_t *t, const lab__tok_t *tok)
{
    if (t->n == t->cap) {
        size_t cap = t->cap != 0 ? t->cap * 2 : 32;
        lab__tok_t *v = realloc(t->v, cap * sizeof(*v));
        if (v == NULL)
            return false;
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = *tok;
    return true;
}

static bool tok_eq(const lab__lexer_t *lx, const lab__tok_t *tok, const char *s)
{
    size_t skip = tok->quoted ? 1 : 0, n = strlen(s);
    return tok->len - 2 * skip == n && memcmp(lx->s + tok->start + skip, s, n) == 0;
}

static const lab_cmd_t *tok_command(const lab__lexer_t *lx, const lab__tok_t *tok)
{
    if (tok->kind != LAB__T_NAME)
        return NULL;
    const lab_cmd_t *c = lab__cmd_findn(lx->s + tok->start, tok->len);
    return c != NULL && !(c->flags & LAB_CMD_FUNCTION) ? c : NULL;
}

/* Index of the first body token: after 'on ... :', or n when the body has
 * not started (the cursor is in the rank list, *in_ranks_p is set). */
static size_t body_start(const lab__lexer_t *lx, const toks_t *t, bool *in_ranks_p)
{
    *in_ranks_p = false;
    if (t->n == 0 || t->v[0].kind != LAB__T_NAME || !tok_eq(lx, &t->v[0], "on"))
        return 0;
    for (size_t i = 1; i < t->n; i++)
        if (t->v[i].kind == LAB__T_COLON)
            return i + 1;
    *in_ranks_p = true;
    return t->n;
}

/* Where the command of the statement is: the token index, or SIZE_MAX. */
static size_t command_index(const lab__lexer_t *lx, const toks_t *t, size_t b)
{
    if (b < t->n && t->v[b].kind == LAB__T_NAME) {
        if (b + 1 < t->n && t->v[b + 1].kind == LAB__T_EQ)
            b += 2;
        if (b < t->n && tok_command(lx, &t->v[b]) != NULL)
            return b;
    }
    return SIZE_MAX;
}

/* Lexes line[0, end) and leaves in t the tokens of its last statement.
 * Returns false on NOMEM; sets *none_p when nothing can be proposed (the
 * cursor is in a comment, a quoted word, or touches a number or a word).
 * Work per token is constant, so a long line costs linear time. */
static bool last_statement(const char *line, size_t end, toks_t *t, lab__lexer_t *lx, bool *none_p)
{
    lab__lex_init(lx, line, end);
    t->n = 0;
    bool words = false, in_ranks = false;
    size_t b = 0; /* where the statement's body starts */
    *none_p = false;
    for (;;) {
        lab__tok_t tok;
        if (words)
            lab__lex_word(lx, &tok);
        else
            lab__lex_next(lx, &tok);
        if (tok.kind == LAB__T_SEMI) {
            t->n = 0;
            b = 0;
            words = in_ranks = false;
            continue;
        }
        if (tok.kind == LAB__T_EOF) {
            /* Blanks are all skip_blanks passes over, except a comment. */
            for (size_t i = tok.start; i < end; i++)
                if (!lab__is_blank((unsigned char)line[i]))
                    *none_p = true;
            break;
        }
        if (!push_tok(t, &tok))
            return false;
        size_t i = t->n - 1;
        if (words) {
            if (tok.kind == LAB__T_ERROR && tok.err == LAB__LEX_UNTERMINATED)
                *none_p = true;
            continue;
        }
        if (i == 0 && tok.kind == LAB__T_NAME && tok_eq(lx, &tok, "on")) {
            in_ranks = true;
            continue;
        }
        if (in_ranks) {
            if (tok.kind == LAB__T_COLON) {
                in_ranks = false;
                b = i + 1;
            }
            continue;
        }
        /* The command is the body's first token, or the one after 'NAME ='.
         * A raw-word command switches the rest of the statement to words,
         * unless it is being assigned to ('help = 1' is an error, but not
         * one that completion should turn into words). */
        bool at_command =
            i == b || (i == b + 2 && t->v[b].kind == LAB__T_NAME && t->v[b + 1].kind == LAB__T_EQ);
        const lab_cmd_t *cmd = at_command ? tok_command(lx, &tok) : NULL;
        if (cmd != NULL && (cmd->flags & LAB_CMD_RAW_WORDS)) {
            lab__lexer_t ahead = *lx;
            lab__tok_t next;
            lab__lex_next(&ahead, &next);
            if (!(i == b && next.kind == LAB__T_EQ))
                words = true;
        }
    }
    if (t->n > 0) {
        const lab__tok_t *last = &t->v[t->n - 1];
        bool touches = last->start + last->len == end;
        if (touches && (last->kind == LAB__T_INT || last->kind == LAB__T_FLOAT ||
                        last->kind == LAB__T_WORD || last->kind == LAB__T_ERROR))
            *none_p = true;
    }
    return true;
}

/* Adds entry's keywords that are not yet given between tokens from and to. */
static void add_keywords(matches_t *m, const lab__lexer_t *lx, const toks_t *t,
                         const lab_cmd_t *entry, size_t from, size_t to)
{
    for (const char *const *k = entry->keywords; *k != NULL; k++) {
        bool used = false;
        int depth = 0;
        for (size_t i = from; i + 1 < to && !used; i++) {
            lab__tok_kind_t kind = t->v[i].kind;
            if (kind == LAB__T_LPAREN || kind == LAB__T_LBRACK || kind == LAB__T_LBRACE)
                depth++;
            else if (kind == LAB__T_RPAREN || kind == LAB__T_RBRACK || kind == LAB__T_RBRACE)
                depth--;
            else if (depth == 0 && kind == LAB__T_NAME && t->v[i + 1].kind == LAB__T_EQ &&
                     tok_eq(lx, &t->v[i], *k))
                used = true;
        }
        if (!used)
            add_match(m, *k, "=");
    }
}

/* The algorithms of the schedule registry that implement the collective
 * the word coll names ("all_reduce", also "all-reduce" or "allreduce"). */
static void add_algorithms(matches_t *m, const lab__lexer_t *lx, const lab__tok_t *coll)
{
    size_t skip = coll->quoted ? 1 : 0;
    char name[64];
    if (coll->len >= sizeof(name))
        return;
    snprintf(name, sizeof(name), "%.*s", (int)(coll->len - 2 * skip), lx->s + coll->start + skip);
    dl_coll_t c;
    if (dl_coll_parse(name, &c) != DL_OK)
        return;
    for (const dl_algo_t *const *a = dl_algos(); *a != NULL; a++)
        if ((*a)->build[c] != NULL)
            add_match(m, (*a)->name, "");
}

static void complete_words(matches_t *m, const lab__lexer_t *lx, const toks_t *t, size_t c)
{
    const lab__tok_t *cmd = &t->v[c], *w = &t->v[c + 1];
    size_t nw = t->n - c - 1;
    if (tok_eq(lx, cmd, "help") && nw == 0) {
        add_commands(m, true, true);
    } else if (tok_eq(lx, cmd, "explain") && nw == 0) {
        add_collectives(m);
    } else if (tok_eq(lx, cmd, "explain") && nw == 1) {
        add_algorithms(m, lx, &w[0]);
    } else if ((tok_eq(lx, cmd, "step") || tok_eq(lx, cmd, "trace")) && nw == 0) {
        add_list(m, on_off);
    } else if (tok_eq(lx, cmd, "set")) {
        if (nw == 0) {
            add_list(m, set_keys);
        } else if (nw == 1 && tok_eq(lx, &w[0], "check")) {
            add_list(m, on_off);
        } else if (nw == 1 && tok_eq(lx, &w[0], "echo")) {
            add_list(m, echo_words);
        } else if (nw == 1 && tok_eq(lx, &w[0], "algo")) {
            add_collectives(m);
        } else if (nw == 2 && tok_eq(lx, &w[0], "algo")) {
            add_algorithms(m, lx, &w[1]);
        }
    }
}

/* Values for keyword key: reduce ops, dtypes, booleans, or names. */
static void complete_keyword_value(matches_t *m, const lab__lexer_t *lx, const lab__tok_t *key,
                                   const char *const *names, size_t n_names)
{
    if (tok_eq(lx, key, "op")) {
        for (int op = 0; op < DL_OP__COUNT; op++)
            add_match(m, dl_op_name((dl_op_t)op), "");
    } else if (tok_eq(lx, key, "dtype")) {
        for (int dt = 0; dt < DL_DTYPE__COUNT; dt++)
            add_match(m, dl_dtype_name((dl_dtype_t)dt), "");
    } else if (tok_eq(lx, key, "async_op")) {
        add_list(m, booleans);
    } else if (tok_eq(lx, key, "device")) {
        add_list(m, devices);
    } else {
        add_values(m, names, n_names);
    }
}

/* Expression context over tokens [from, n): cmd is the statement's command
 * (NULL in an assignment's value). */
static void complete_expr(matches_t *m, const lab__lexer_t *lx, const toks_t *t, size_t from,
                          const lab_cmd_t *cmd, const char *const *names, size_t n_names)
{
    size_t n = t->n;
    const lab__tok_t *last = n > from ? &t->v[n - 1] : NULL;
    if (last != NULL && last->kind == LAB__T_EQ && n - 1 > from &&
        t->v[n - 2].kind == LAB__T_NAME) {
        complete_keyword_value(m, lx, &t->v[n - 2], names, n_names);
        return;
    }
    /* The innermost bracket still open before the cursor. */
    size_t open = SIZE_MAX;
    int depth = 0;
    for (size_t i = n; i-- > from;) {
        lab__tok_kind_t kind = t->v[i].kind;
        if (kind == LAB__T_RPAREN || kind == LAB__T_RBRACK || kind == LAB__T_RBRACE) {
            depth++;
        } else if (kind == LAB__T_LPAREN || kind == LAB__T_LBRACK || kind == LAB__T_LBRACE) {
            if (depth == 0) {
                open = i;
                break;
            }
            depth--;
        }
    }
    bool arg_start = last == NULL || last->kind == LAB__T_COMMA || last->kind == LAB__T_LPAREN ||
                     last->kind == LAB__T_RPAREN || last->kind == LAB__T_RBRACK ||
                     last->kind == LAB__T_NAME || last->kind == LAB__T_INT ||
                     last->kind == LAB__T_FLOAT;
    if (open != SIZE_MAX) {
        const lab_cmd_t *owner = NULL;
        if (t->v[open].kind == LAB__T_LPAREN && open > 0 && !t->v[open].space_before &&
            t->v[open - 1].kind == LAB__T_NAME) {
            owner = lab__cmd_findn(lx->s + t->v[open - 1].start, t->v[open - 1].len);
        }
        bool call_arg_start = last->kind == LAB__T_LPAREN || last->kind == LAB__T_COMMA;
        if (owner != NULL && call_arg_start)
            add_keywords(m, lx, t, owner, open + 1, n);
        add_values(m, names, n_names);
        return;
    }
    if (cmd != NULL && arg_start)
        add_keywords(m, lx, t, cmd, from, n);
    add_values(m, names, n_names);
}

dl_status_t lab_complete(const char *line, int cursor, const char *const *names, size_t n_names,
                         char ***matches_p, size_t *n_p, int *start_p)
{
    if (line == NULL || matches_p == NULL || n_p == NULL || cursor < 0 ||
        (names == NULL && n_names > 0))
        return DL_ERR_INVALID;
    size_t len = strnlen(line, LAB_LANG_MAX_LINE + 1);
    if (len > LAB_LANG_MAX_LINE)
        return DL_ERR_TOO_BIG;
    size_t end = (size_t)cursor < len ? (size_t)cursor : len;
    size_t w = end;
    while (w > 0 && lab__is_name_char((unsigned char)line[w - 1]))
        w--;

    matches_t m = {.word = line + w, .word_len = end - w};
    toks_t t = {0};
    lab__lexer_t lx;
    bool none = false;
    if (!last_statement(line, w, &t, &lx, &none)) {
        free(t.v);
        return DL_ERR_NOMEM;
    }
    /* A word that starts with a digit is a number being typed. */
    if (end > w && line[w] >= '0' && line[w] <= '9')
        none = true;

    bool in_ranks;
    size_t b = body_start(&lx, &t, &in_ranks);
    size_t c = command_index(&lx, &t, b);
    if (none || in_ranks) {
        /* Nothing fits here. */
    } else if (b == t.n) {
        add_commands(&m, false, true);
    } else if (c != SIZE_MAX) {
        const lab_cmd_t *cmd = tok_command(&lx, &t.v[c]);
        if (cmd->flags & LAB_CMD_RAW_WORDS)
            complete_words(&m, &lx, &t, c);
        else
            complete_expr(&m, &lx, &t, c + 1, cmd, names, n_names);
    } else if (t.v[b].kind == LAB__T_NAME && b + 1 < t.n && t.v[b + 1].kind == LAB__T_EQ) {
        if (b + 2 == t.n)
            add_commands(&m, false, false);
        complete_expr(&m, &lx, &t, b + 2, NULL, names, n_names);
    }
    free(t.v);
    if (m.nomem) {
        lab_complete_free(m.v, m.n);
        return DL_ERR_NOMEM;
    }

    if (m.n > 1)
        qsort(m.v, m.n, sizeof(*m.v), compare_strings);
    size_t kept = 0;
    for (size_t i = 0; i < m.n; i++) {
        if (kept > 0 && strcmp(m.v[kept - 1], m.v[i]) == 0)
            free(m.v[i]);
        else
            m.v[kept++] = m.v[i];
    }
    if (kept == 0) {
        free(m.v);
        m.v = NULL;
    }
    *matches_p = m.v;
    *n_p = kept;
    if (start_p != NULL)
        *start_p = (int)w;
    return DL_OK;
}

void lab_complete_free(char **matches, size_t n)
{
    if (matches == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(matches[i]);
    free(matches);
}
