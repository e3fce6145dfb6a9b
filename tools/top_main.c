/* cuzk-top — live viewer of a cuzkd instance's stats page (tools/top.c). */
#include "tools/top.h"

int main(int argc, char **argv)
{
    return top_main(argc, argv);
}
