/* Python's exception classes as the shell's try/except and raise take
 * them. The shell's errors are messages, worded as Python and torch word
 * theirs; the class of one is read from its words, as a learner reads a
 * traceback's last line. */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "lab/lang/lang.h"

/* Each class and the one above it (NULL: Exception's, below BaseException). */
static const struct {
    const char *name, *base;
} classes[] = {
    {"BaseException", NULL},
    {"Exception", "BaseException"},
    {"RuntimeError", "Exception"},
    {"NotImplementedError", "RuntimeError"},
    {"ValueError", "Exception"},
    {"TypeError", "Exception"},
    {"LookupError", "Exception"},
    {"KeyError", "LookupError"},
    {"IndexError", "LookupError"},
    {"NameError", "Exception"},
    {"ArithmeticError", "Exception"},
    {"ZeroDivisionError", "ArithmeticError"},
    {"AssertionError", "Exception"},
    {"AttributeError", "Exception"},
    {"OverflowError", "ArithmeticError"},
    {"RecursionError", "RuntimeError"},
};

static int class_index(const char *name)
{
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
        if (strcmp(classes[i].name, name) == 0)
            return (int)i;
    return -1;
}

bool lab_lang_is_exc_class(const char *name)
{
    return class_index(name) >= 0;
}

bool lab_lang_exc_catches(const char *want, const char *have)
{
    for (int i = class_index(have); i >= 0;) {
        if (strcmp(classes[i].name, want) == 0)
            return true;
        i = classes[i].base != NULL ? class_index(classes[i].base) : -1;
    }
    return false;
}

/* Words of a message and the class they mean, tried in order. */
static const struct {
    const char *words, *cls;
} by_words[] = {
    /* first the messages that quote the learner's own text, so that the
     * text cannot pass for other words (int('by zero')) */
    {"invalid literal", "ValueError"},
    {"could not convert", "ValueError"},
    {"is not in list", "ValueError"},
    {"is not in tuple", "ValueError"},
    {"substring not found", "ValueError"},
    {"cannot access local variable", "NameError"}, /* Python's UnboundLocalError */
    {"is not defined", "NameError"},
    {"unknown function", "NameError"},
    {"out of range", "IndexError"}, /* "list index out of range", torch's dims */
    {"is out of bounds for dimension", "IndexError"},
    {"by zero", "ZeroDivisionError"},
    {"cannot be raised to a negative power", "ZeroDivisionError"},
    {"values to unpack", "ValueError"},
    {"modified during sort", "ValueError"},
    {"math domain error", "ValueError"},
    {"arg is an empty sequence", "ValueError"},
    {"negative shift count", "ValueError"},
    {"slice step cannot be zero", "ValueError"},
    {"has no attribute", "AttributeError"},
    {"not supported between instances", "TypeError"},
    {"unsupported operand", "TypeError"},
    {"bad operand type", "TypeError"},
    {"can only concatenate", "TypeError"},
    {"can't multiply sequence", "TypeError"},
    {"object is not", "TypeError"},
    {"is not iterable", "TypeError"},
    {"cannot iterate over", "TypeError"},
    {"not callable", "TypeError"},
    {"not a function", "TypeError"},
    {"has no len()", "TypeError"},
    {"doesn't define __round__", "TypeError"},
    {"cannot be interpreted as an integer", "TypeError"},
    {"indices must be integers", "TypeError"},
    {"support item deletion", "TypeError"}, /* del t[0] doesn't, del t[0:1] does not */
    {"unhashable type", "TypeError"},
    {"sequence item", "TypeError"},
    {"a real number is required", "TypeError"},
    {"needs numbers or tensors", "TypeError"},
    {"must be a type", "TypeError"},
    {"must be an iterable", "TypeError"},
    {"positional argument", "TypeError"},
    {"keyword argument", "TypeError"},
    {"multiple values for argument", "TypeError"},
    {"takes no arguments", "TypeError"},
    /* Python's own words for its builtins' errors */
    {"not in list", "ValueError"}, /* list.remove(x): x not in list */
    {"Unknown format code", "ValueError"},
    {"Invalid format specifier", "ValueError"},
    {"empty separator", "ValueError"},
    {"cannot convert float NaN", "ValueError"},
    {"must not be zero", "ValueError"}, /* range() arg 3 */
    {"for randrange()", "ValueError"},
    {"number of bits must be non-negative", "ValueError"},
    {"encountered in format string", "ValueError"},
    {"cannot switch from", "ValueError"},
    {"incomplete format", "ValueError"},
    {"unsupported format character", "ValueError"},
    {"pop from empty list", "IndexError"},
    {"Cannot choose from an empty sequence", "IndexError"},
    {"referenced before assignment", "NameError"},
    {"not all arguments converted", "TypeError"},
    {"not enough arguments for format string", "TypeError"},
    {"an integer is required", "TypeError"},
    {"requires string as left operand", "TypeError"},
    {"does not support item assignment", "TypeError"},
    {"cannot unpack", "TypeError"},
    {"expected at least", "TypeError"},
    {"expected at most", "TypeError"},
    {"argument (", "TypeError"}, /* len() takes exactly one argument (2 given) */
    {"arguments (", "TypeError"},
    {"can only join an iterable", "TypeError"},
    {"must be str or None", "TypeError"},
    {"must be None or str", "TypeError"},
    {"must be real number", "TypeError"},
    {"cannot convert float infinity", "OverflowError"},
    {"math range error", "OverflowError"},
    {"integer overflow", "OverflowError"},
    {"does not fit in", "OverflowError"},
    {"maximum recursion depth", "RecursionError"},
    {"to extended slice of size", "ValueError"}, /* l[::2] = x of another length */
    {"unsupported format string passed to", "TypeError"},
    {"not allowed in integer format specifier", "ValueError"},
    {"not allowed in string format specifier", "ValueError"},
    {"Cannot specify '", "ValueError"}, /* ',' or '_' with a type that takes none */
    {"can only assign an iterable", "TypeError"},
    {"must assign iterable", "TypeError"},
    {"slice indices must be integers", "TypeError"},
};

const char *lab_lang_exc_class_of(const char *message)
{
    /* "KeyError: 'k'", "AssertionError", what a raise said */
    size_t n = strcspn(message, ":");
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
        if (strlen(classes[i].name) == n && strncmp(message, classes[i].name, n) == 0)
            return classes[i].name;
    for (size_t i = 0; i < sizeof(by_words) / sizeof(by_words[0]); i++)
        if (strstr(message, by_words[i].words) != NULL)
            return by_words[i].cls;
    return "RuntimeError";
}
